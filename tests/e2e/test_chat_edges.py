"""The chat's and the CLI's rough edges a newcomer hit (issue 39), as a person meets them: `riverbeam chat`
in a pseudo-terminal and the CLI's exit code and stderr, against one `riverbeam dev --agents` (an `author`
with git_push, a `helper` with read-only tools, a `releaser` whose `deploy` takes `replicas: int`)."""

from __future__ import annotations

import json
import re
import sys
import uuid
from collections.abc import Iterator

import pexpect
import pytest
from riverbeam_local.clients.dev_process import DevProcess

from tests.support.devstack import (
    ANSI,
    free_port,
    http,
    invoke_over_http,
    remote_refs,
    riverbeam,
    running_with_agents,
    screen,
    secret_of,
    spawn_chat,
)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]
PROMPT = screen("you      >")
AGENTS = """\
agents:
  author:
    tools: [git_push]
  helper:
    tools: [read_file, list_files]
  releaser:
    tools: [edge_tools:deploy]
"""
TOOL = '''\
from riverbeam import tool


@tool(confirm_required=True)
def deploy(service: str, replicas: int = 1) -> dict:
    """Deploy a service (this one only says what it was given)."""
    return {"deployed": service, "replicas": replicas}
'''
QUESTION = 'Approve git_push {"ref": "docs/update"}? [y/N/a] (a: allow git_push for this session, any args;'


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevProcess]:
    root = tmp_path_factory.mktemp("edges")
    (root / "agent_code").mkdir()
    (root / "agent_code" / "edge_tools.py").write_text(TOOL)
    with running_with_agents(root, AGENTS) as process:
        yield process


def flags(dev: DevProcess, user: str = "u1") -> tuple[str, ...]:
    return ("--url", dev.http_url, "--secret", secret_of(dev), "--user", user)


def chat_args(dev: DevProcess, *more: str) -> pexpect.spawn[str]:
    return pexpect.spawn(
        sys.executable,
        ["-m", "riverbeam_local", "chat", *flags(dev), *more],
        encoding="utf-8",
        timeout=120,
        dimensions=(50, 200),
    )


def plain(text: str | None) -> str:
    return re.sub(ANSI, "", text or "").strip()


def test_help_keys_grants_and_revoke(dev: DevProcess) -> None:
    session_id = str(uuid.uuid4())
    chat = spawn_chat(dev, "u1", session_id, columns=200)
    try:
        chat.expect(PROMPT)
        chat.send("/help\r")
        for line in ("/grants", "/revoke N", "/quit", "a: approve, and allow this tool", "A: approve, and"):
            chat.expect(screen(line))
        chat.expect(PROMPT)
        chat.send("/grants\r")
        chat.expect(screen("grants   no standing grants in this session"))

        chat.send("Push docs/update\r")
        chat.expect(screen(QUESTION))  # the question says what `a` grants, and offers `A`
        chat.send("A\r")  # exactly these args
        chat.expect(screen("approved git_push (always with these args, here)"))
        chat.expect(screen("author   : Pushed docs/update."))
        chat.expect(PROMPT)
        status, listed = http(dev, "GET", f"/sessions/{session_id}/grants?user_id=u1")
        assert status == 200 and [g["scope"] for g in listed["grants"]] == ["args"], listed

        chat.send("Push main\r")  # other args: asked, not granted
        chat.expect(screen('Approve git_push {"ref": "main"}? [y/N/a]'))
        chat.send("a\r")  # the tool, any args
        chat.expect(screen("approved git_push (always, here)"))
        chat.expect(PROMPT)
        chat.send("/grants\r")
        chat.expect(screen("grants   1. git_push, only the args it was granted with, since "))
        chat.expect(screen("grants   2. git_push, any args, since "))
        chat.expect(PROMPT)
        chat.send("/revoke 9\r")
        chat.expect(screen("no grant 9 in this session (/grants lists them); nothing was revoked"))
        chat.send("/revoke 2\r")
        chat.expect(screen("revoked  git_push ("))
        chat.expect(screen("): its calls are asked again"))
        chat.expect(PROMPT)
        status, listed = http(dev, "GET", f"/sessions/{session_id}/grants?user_id=u1")
        assert [g["scope"] for g in listed["grants"]] == ["args"], listed
        chat.send("Push release\r")  # the tool grant revoked: asked again
        chat.expect(screen('Approve git_push {"ref": "release"}? [y/N/a]'))
        chat.send("n\r")
        chat.expect(screen("Reason (optional):"))
        chat.send("\r")
        chat.expect(PROMPT)
        chat.send("/quit\r")
        chat.expect(pexpect.EOF)
    finally:
        chat.close(force=True)


def test_chat_messages_read_as_a_person_would(dev: DevProcess) -> None:
    session_id = str(uuid.uuid4())
    assert invoke_over_http(dev, session_id, "Push docs/update")["interrupted"] is True
    chat = spawn_chat(dev, "u1", session_id, columns=200)
    try:
        # a time as a person says it, not a raw ISO string
        chat.expect(screen("note     1 approval(s) waiting since "))
        chat.expect(r"\d\d:\d\d \((just now|\d+ minutes? ago)\)")
        chat.expect(screen("? [y/N/a]"))
        chat.send("n\r")
        chat.expect(screen("Reason (optional):"))
        chat.send("\r")
        chat.expect(PROMPT)

        chat.send("Push nosuch\r")  # a branch that does not exist: the tool failed, not "rejected"
        chat.expect(screen('Approve git_push {"ref": "nosuch"}?'))
        chat.send("y\r")
        chat.expect(screen("result   git_push error BEM-330 push of nosuch failed: the branch nosuch does"))
        chat.expect(PROMPT)
        assert "rejected" not in plain(chat.before)
        assert "refs/heads/nosuch" not in remote_refs(dev.data_dir)
    finally:
        chat.close(force=True)


def test_a_call_whose_args_do_not_fit_says_why_it_was_not_asked(dev: DevProcess) -> None:
    chat = chat_args(dev, "--agent", "releaser")
    try:
        chat.expect(PROMPT)
        chat.send('call deploy {"service": "web", "replicas": "two"}\r')
        chat.expect(screen("refused  deploy: invalid arguments: replicas: "))
        chat.expect(screen("(not asked: the args do not fit)"))
        chat.expect(PROMPT)
        assert "Approve" not in plain(chat.before)
        chat.send("/quit\r")
        chat.expect(pexpect.EOF)
    finally:
        chat.close(force=True)


def test_a_tool_no_policy_decided_is_not_said_allowed_by_policy(dev: DevProcess) -> None:
    chat = chat_args(dev, "--agent", "helper")
    try:
        chat.expect(PROMPT)
        chat.send("hello\r")  # the helper's own fallback, not the author's push offer
        chat.expect(screen("helper   : I run offline: say 'call <tool> <args JSON>'"))
        chat.expect(PROMPT)
        assert "push" not in plain(chat.before)
        chat.send('call list_files {"path": "."}\r')
        chat.expect(screen('tool     list_files {"path": "."}'))
        chat.expect(screen("result   list_files ok"))
        chat.expect(PROMPT)
        assert "by policy" not in plain(chat.before)
        chat.send("/quit\r")
        chat.expect(pexpect.EOF)
    finally:
        chat.close(force=True)


def test_chat_refuses_an_unknown_session_or_agent_at_start(dev: DevProcess) -> None:
    unknown = str(uuid.uuid4())
    for more, said in (
        (("--session", unknown), f"riverbeam chat: no session {unknown} of yours"),
        (("--agent", "nosuch"), "riverbeam chat: no agent 'nosuch' on"),
    ):
        chat = chat_args(dev, *more)
        chat.expect(pexpect.EOF)
        chat.close()
        assert chat.exitstatus == 1 and plain(chat.before).startswith(said), plain(chat.before)
        assert "\n" not in plain(chat.before)
    status, _ = http(dev, "GET", f"/sessions/{unknown}?user_id=u1")
    assert status == 404  # nothing was started


def test_cli_edges(dev: DevProcess) -> None:
    port = free_port()
    for command in (["invoke", "--text", "hi"], ["get", "run", "r1"], ["frames", "r1"], ["approvals"]):
        done = riverbeam(*command, "--url", f"http://127.0.0.1:{port}", "--user", "u1")
        assert done.returncode == 1, done.stderr
        assert "is `riverbeam dev` running?" in done.stderr and len(done.stderr.splitlines()) == 1
    chat = pexpect.spawn(
        sys.executable,
        ["-m", "riverbeam_local", "chat", "--url", f"http://127.0.0.1:{port}"],
        encoding="utf-8",
    )
    chat.expect(pexpect.EOF)
    chat.close()
    assert chat.exitstatus == 1 and "is `riverbeam dev` running?" in plain(chat.before)

    asked = invoke_over_http(dev, str(uuid.uuid4()), "Push docs/update")
    action_id = asked["action_required"][0]["action_id"]
    done = riverbeam("resume", "--approve", action_id, "--reason", "why not", *flags(dev))
    assert done.returncode == 2 and "--reason goes with --reject" in done.stderr, done.stderr
    status, action = http(dev, "GET", f"/actions/{action_id}?user_id=u1")
    assert status == 200 and action["status"] == "pending"  # nothing was answered

    done = riverbeam("policy", "--help")
    assert done.returncode == 0 and "riverbeam policy check" in done.stdout, done.stderr
    assert json.dumps(done.stderr) == '""'

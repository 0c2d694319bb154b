"""Approvers through `riverbeam dev` as a child process and the `riverbeam` command, as a person runs them:
u1 asks for a push that two of ops must approve and u1 may not; `riverbeam approvals` shows it to each
approver, the first vote is recorded without a run, the second pushes the branch, once."""

from __future__ import annotations

import json
import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pexpect
import pytest
from riverbeam_local.clients.dev_process import DevProcess

from tests.support.devstack import (
    TIMEOUT_SECONDS,
    TWO_OF_OPS,
    remote_refs,
    riverbeam,
    running_with_agents,
    screen,
    secret_of,
    spawn_chat,
    work_commit,
)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]


OWNER_AND_ANA = """
agents:
  author:
    tools: [git_push]
    tool_settings:
      git_push: {approvers: {users: [ana]}, required: 2}
"""


@pytest.fixture
def dev(tmp_path: Path) -> Iterator[DevProcess]:
    with running_with_agents(tmp_path, TWO_OF_OPS) as process:
        yield process


def run(dev: DevProcess, *args: str, user: str, groups: tuple[str, ...] = ()) -> tuple[int, Any, str]:
    named = [arg for group in groups for arg in ("--group", group)]
    done = riverbeam(*args, *named, "--url", dev.http_url, "--user", user, "--secret", secret_of(dev))
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, json.loads(done.stdout) if done.stdout.strip() else None, done.stderr


def test_two_of_ops_approve_a_push_from_the_command_line(dev: DevProcess) -> None:
    session_id = str(uuid.uuid4())
    code, result, _ = run(dev, "invoke", "--text", "Push docs/update", "--session", session_id, user="u1")
    assert code == 0 and result["interrupted"]
    action_id = result["action_required"][0]["action_id"]

    for user in ("ana", "bo"):
        code, inbox, _ = run(dev, "approvals", user=user, groups=("ops",))
        assert code == 0 and [a["action_id"] for a in inbox["actions"]] == [action_id]
    assert run(dev, "approvals", user="u1")[1]["actions"] == []  # four eyes

    code, _, err = run(dev, "resume", "--approve", action_id, user="u1")
    assert code == 1 and json.loads(err)["error"]["code"] == "BEM-090"
    code, voted, _ = run(dev, "resume", "--approve", action_id, user="ana", groups=("ops",))
    assert code == 0 and voted["pending"][0]["required"] == 2
    assert "docs/update" not in remote_refs(dev.data_dir)

    code, ack, _ = run(dev, "resume", "--approve", action_id, user="bo", groups=("ops",))
    assert code == 0 and ack["run_id"]
    flags = ("--url", dev.http_url, "--user", "u1", "--secret", secret_of(dev))
    done = riverbeam("frames", ack["run_id"], "--follow", *flags)
    assert done.returncode == 0 and json.loads(done.stdout.splitlines()[-1])["type"] == "done"
    code, action, _ = run(dev, "get", "action", action_id, user="bo", groups=("ops",))
    assert code == 0 and action["status"] == "resolved" and action["outcome"]["status"] == "ok"
    assert [v["user_id"] for v in action["response"]["votes"]] == ["ana", "bo"]
    refs = remote_refs(dev.data_dir)
    assert refs["refs/heads/docs/update"] == work_commit(dev.data_dir, "docs/update")


def test_the_chat_says_its_vote_is_recorded_and_an_approver_completes_the_quorum(tmp_path: Path) -> None:
    with running_with_agents(tmp_path, OWNER_AND_ANA) as dev:
        session_id = str(uuid.uuid4())
        chat = spawn_chat(dev, "u1", session_id, columns=200)
        try:
            chat.expect(screen("you      >"))
            chat.send("Push docs/update\r")
            chat.expect(screen("Approve git_push"))
            chat.send("y\r")
            chat.expect(screen("your vote is recorded (1 of 2 approvals): it runs once the others approve"))
            assert "refs/heads/docs/update" not in remote_refs(dev.data_dir)
            code, inbox, _ = run(dev, "approvals", user="ana")
            (action,) = inbox["actions"]
            assert [v["user_id"] for v in action["votes"]] == ["u1"]
            code, ack, _ = run(dev, "resume", "--approve", action["action_id"], user="ana")
            assert code == 0 and ack["run_id"]
            flags = ("--url", dev.http_url, "--user", "u1", "--secret", secret_of(dev))
            done = riverbeam("frames", ack["run_id"], "--follow", *flags)
            assert done.returncode == 0 and json.loads(done.stdout.splitlines()[-1])["type"] == "done"
        finally:
            chat.close(force=True)
        assert remote_refs(dev.data_dir)["refs/heads/docs/update"] == work_commit(dev.data_dir, "docs/update")


def test_the_approver_chat_answers_the_inbox(dev: DevProcess) -> None:
    session_id = str(uuid.uuid4())
    code, result, _ = run(dev, "invoke", "--text", "Push docs/update", "--session", session_id, user="u1")
    assert code == 0 and result["interrupted"]
    flags = [
        "--url",
        dev.http_url,
        "--secret",
        secret_of(dev),
        "--user",
        "ana",
        "--group",
        "ops",
        "--approver",
    ]
    chat = pexpect.spawn(
        sys.executable,
        ["-m", "riverbeam_local", "chat", *flags],
        env={**os.environ, "TERM": "xterm-256color", "PROMPT_TOOLKIT_NO_CPR": "1"},
        encoding="utf-8",
        timeout=TIMEOUT_SECONDS,
        dimensions=(50, 200),
    )
    try:
        chat.expect(screen(f"u1 asks in session {session_id} (agent author); 0 of 2 approvals"))
        chat.expect(screen('Approve git_push {"ref": "docs/update"}?'))
        chat.send("y\r")
        chat.expect(screen("your vote is recorded (1 of 2 approvals)"))
        chat.expect(screen("nothing waits for you"))
        code, ack, _ = run(
            dev, "resume", "--approve", result["action_required"][0]["action_id"], user="bo", groups=("ops",)
        )
        assert code == 0 and ack["run_id"]
        chat.sendintr()
        chat.expect(pexpect.EOF)
    finally:
        chat.close(force=True)
    assert chat.exitstatus == 0

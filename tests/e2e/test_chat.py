"""`riverbeam chat` driven in a pseudo-terminal (pexpect) against `riverbeam dev` as a child process on a
free port of 127.0.0.1 with its own data dir: approve, refuse, keys typed ahead of a question, leaving, and a
stack restarted under a running chat."""

from __future__ import annotations

import os
import re
import signal
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pexpect
import pytest
from riverbeam_local.clients.dev_process import DevProcess, running, start

from tests.support.devstack import (
    ANSI,
    TIMEOUT_SECONDS,
    assert_none_left,
    free_port,
    http,
    remote_refs,
    screen,
    spawn_chat,
    work_commit,
)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]
PROMPT = screen("you      >")


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevProcess]:
    data_dir = tmp_path_factory.mktemp("chat")
    with running(data_dir) as process:
        yield process
    assert_none_left(data_dir)


class Chat:
    """One `riverbeam chat` in a pseudo-terminal, as a person would type into it."""

    def __init__(self, dev: DevProcess, session_id: str | None = None, user: str = "u1") -> None:
        self.session_id = session_id or str(uuid.uuid4())
        self.dev = dev
        self.user = user
        self.term = spawn_chat(dev, user, self.session_id, columns=200)
        self.expect(PROMPT)

    def expect(self, pattern: str) -> None:
        self.term.expect(pattern)

    def see(self, text: str) -> None:
        self.term.expect(screen(text))

    def say(self, line: str) -> None:
        self.term.send(line + "\r")

    def question(self, tool: str, args: str) -> None:
        self.see(f"Approve {tool} {args}? [y/N/a]")  # git_push may be granted for the session

    def leave(self) -> int:
        self.say("/quit")
        self.term.expect(pexpect.EOF)
        self.term.close()
        return int(self.term.exitstatus or 0) if self.term.signalstatus is None else -1

    def stop(self) -> None:
        if self.term.isalive():
            self.term.close(force=True)

    def messages(self) -> list[dict[str, Any]]:
        status, page = http(self.dev, "GET", f"/sessions/{self.session_id}/messages?user_id={self.user}")
        assert status == 200, page
        return page["messages"]  # type: ignore[no-any-return]

    def action(self, asked_by: str) -> dict[str, object]:
        """The action asked for in the run of the message `asked_by` (read over HTTP, as any client may)."""
        query = f"?user_id={self.user}"
        (run_id,) = [m["run_id"] for m in self.messages() if m["content"][0].get("text") == asked_by]
        status, frames = http(self.dev, "GET", f"/runs/{run_id}/frames{query}")
        (action,) = frames["frames"][-1]["result"]["action_required"]
        status, stored = http(self.dev, "GET", f"/actions/{action['action_id']}{query}")
        assert status == 200, stored
        return stored  # type: ignore[no-any-return]


@pytest.fixture
def chat(dev: DevProcess) -> Iterator[Chat]:
    opened = Chat(dev)
    yield opened
    opened.stop()


def test_approve_then_refuse(dev: DevProcess, chat: Chat) -> None:
    chat.say("Push docs/update")
    chat.see("author   : I will push docs/update.")
    chat.see('tool     git_push {"ref": "docs/update"} needs approval')
    chat.question("git_push", '{"ref": "docs/update"}')
    chat.say("y")
    chat.see("approved git_push")
    chat.see("result   git_push ok ref=docs/update")
    chat.see("author   : Pushed docs/update.")
    chat.expect(PROMPT)
    pushed = work_commit(dev.data_dir, "docs/update")
    assert remote_refs(dev.data_dir)["refs/heads/docs/update"] == pushed

    chat.say("Push main")
    chat.question("git_push", '{"ref": "main"}')
    chat.say("n")
    chat.see("Reason (optional):")
    chat.say("not before the release")
    chat.see("rejected git_push: not before the release")
    chat.see("author   : Understood: I did not push main.")
    chat.expect(PROMPT)
    assert "refs/heads/main" not in remote_refs(dev.data_dir)
    refused = chat.action("Push main")
    assert refused["args"] == {"ref": "main"}
    assert refused["status"] == "cancelled"
    assert refused["response"]["reason"] == "not before the release"  # type: ignore[index]
    assert chat.leave() == 0


def test_keys_typed_ahead_of_the_question_do_not_answer_it(dev: DevProcess, chat: Chat) -> None:
    # "y" and Enter typed right behind the message, in the same write: they reach the terminal before the
    # question exists, so they must not answer it (neither the y nor the Enter, which would mean no)
    chat.term.send("Push docs/update\ry\r")
    chat.question("git_push", '{"ref": "docs/update"}')
    deadline = time.monotonic() + 3.0
    while time.monotonic() < deadline:  # the question waits, the action stays pending
        assert chat.action("Push docs/update")["status"] == "pending"
        time.sleep(0.5)
    seen = chat.term.expect([pexpect.TIMEOUT, screen("approved"), screen("Reason")], timeout=1)
    assert seen == 0, chat.term.before
    chat.say("n")
    chat.see("Reason (optional):")
    chat.say("typed ahead")
    chat.see("rejected git_push: typed ahead")
    chat.expect(PROMPT)
    answered = chat.action("Push docs/update")
    assert answered["status"] == "cancelled"
    assert answered["response"]["reason"] == "typed ahead"  # type: ignore[index]
    assert chat.leave() == 0


def test_keys_typed_while_the_agent_works_do_not_answer_the_question(dev: DevProcess, chat: Chat) -> None:
    # the stack is held (SIGSTOP) while the message goes out, so the question cannot appear before the
    # keys typed after the prompt closed: they wait in the terminal, and must be discarded, not read
    os.kill(dev.process.pid, signal.SIGSTOP)
    try:
        chat.say("Push docs/update")
        chat.expect(re.escape("\x1b[?2004l"))  # the prompt is closed (bracketed paste off)
        time.sleep(0.5)
        chat.say("y")
    finally:
        os.kill(dev.process.pid, signal.SIGCONT)
    chat.question("git_push", '{"ref": "docs/update"}')
    time.sleep(2.0)
    assert chat.action("Push docs/update")["status"] == "pending"
    chat.say("n")
    chat.see("Reason (optional):")
    chat.say("")
    chat.see("rejected git_push")
    chat.expect(PROMPT)
    assert chat.action("Push docs/update")["status"] == "cancelled"
    assert chat.leave() == 0


def test_ctrl_c_while_the_agent_works_stops_waiting_not_the_chat(dev: DevProcess, chat: Chat) -> None:
    os.kill(dev.process.pid, signal.SIGSTOP)  # held: the invoke waits for its answer
    try:
        chat.say("Hello")
        chat.expect(re.escape("\x1b[?2004l"))  # the prompt is closed
        time.sleep(0.5)
        chat.term.sendcontrol("c")
        chat.see("note     stopped waiting (the run goes on on the server)")
        chat.expect(PROMPT)
    finally:
        os.kill(dev.process.pid, signal.SIGCONT)
    # the run left behind goes on: its answer is stored, though no longer shown
    deadline = time.monotonic() + TIMEOUT_SECONDS
    while [m["role"] for m in chat.messages()] != ["human", "ai"]:
        assert time.monotonic() < deadline, chat.messages()
        time.sleep(0.2)
    chat.say("Push main")
    chat.question("git_push", '{"ref": "main"}')
    chat.say("n")
    chat.say("")
    chat.see("rejected git_push")
    chat.expect(PROMPT)
    assert chat.leave() == 0
    assert "Traceback" not in (chat.term.before or "")


def test_ctrl_c_clears_the_line_then_leaves_and_ctrl_d_leaves(dev: DevProcess) -> None:
    first = Chat(dev)
    try:
        first.term.send("Push docs/update")
        first.term.sendcontrol("c")  # clears the line: nothing is sent
        first.term.sendcontrol("c")  # on an empty line: leaves
        first.term.expect(pexpect.EOF)
        first.term.close()
        assert first.term.exitstatus == 0
        assert "Traceback" not in (first.term.before or "")
        status, page = http(dev, "GET", f"/sessions/{first.session_id}/messages?user_id=u1")
        assert (status, page["messages"]) == (200, [])  # the cleared line was not sent
    finally:
        first.stop()
    second = Chat(dev)
    try:
        second.term.sendcontrol("d")
        second.term.expect(pexpect.EOF)
        second.term.close()
        assert second.term.exitstatus == 0
    finally:
        second.stop()


def test_a_stack_that_restarts_under_the_chat_is_reconnected(tmp_path: Path) -> None:
    port = free_port()
    first = start(tmp_path, port=port)
    chat: Chat | None = None
    try:
        chat = Chat(first)  # the secret it is given is the data dir's: the same after the restart
        chat.say("Hello")
        chat.see("author   : I can push a branch for you")
        chat.expect(PROMPT)
        assert first.stop() == 0
        with running(tmp_path, port=port) as second:
            chat.say("Push docs/update")
            chat.see("connection lost; reconnecting")
            chat.question("git_push", '{"ref": "docs/update"}')
            chat.say("y")
            chat.see("author   : Pushed docs/update.")
            chat.expect(PROMPT)
            assert "refs/heads/docs/update" in remote_refs(second.data_dir)
            assert chat.leave() == 0
    finally:
        if chat is not None:
            chat.stop()
        first.stop()
    assert_none_left(tmp_path)


def test_a_stack_that_is_not_there_is_one_line_and_exit_1() -> None:
    term = pexpect.spawn(
        sys.executable,
        ["-m", "riverbeam_local", "chat", "--url", f"http://127.0.0.1:{free_port()}"],
        encoding="utf-8",
        timeout=TIMEOUT_SECONDS,
    )
    term.expect(pexpect.EOF)
    term.close()
    assert term.exitstatus == 1
    out = re.sub(ANSI, "", term.before or "").strip()  # prompt_toolkit resets the cursor on its way out
    assert out.startswith("riverbeam chat: cannot reach http://127.0.0.1:") and "\n" not in out, out


def test_help_and_unknown_commands_are_answered_by_the_chat(dev: DevProcess, chat: Chat) -> None:
    chat.say("/help")
    chat.see("help     /help  this list")
    chat.see("help     /quit  leave")
    chat.expect(PROMPT)
    chat.say("/frobnicate")
    chat.see("note     /frobnicate is not a command of the chat (/help lists them); nothing was sent")
    chat.expect(PROMPT)
    chat.say("Push docs/update")  # the chat still talks to the agent
    chat.question("git_push", '{"ref": "docs/update"}')
    chat.say("n")
    chat.say("")
    chat.see("rejected git_push")
    chat.expect(PROMPT)
    texts = [part.get("text") for m in chat.messages() for part in m["content"] if part.get("text")]
    assert "Push docs/update" in texts
    assert not any("/help" in text or "/frobnicate" in text for text in texts), texts
    assert chat.leave() == 0


def test_a_push_the_remote_rejects_is_shown_once(dev: DevProcess, chat: Chat) -> None:
    hook = dev.data_dir / "remote.git" / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'no pushes today' >&2\nexit 1\n")
    hook.chmod(0o755)
    try:
        chat.say("Push main")  # main: the module's other tests never push it, so there is something to push
        chat.question("git_push", '{"ref": "main"}')
        chat.say("y")
        chat.see("approved git_push")
        chat.expect(PROMPT)
    finally:
        hook.unlink()
    shown = re.sub(ANSI, "", chat.term.before or "")
    lines = [line.strip() for line in shown.splitlines() if line.strip()]
    failure = "git_push error BEM-330 push of main to origin rejected: remote: no pushes today"
    assert [line for line in lines if "BEM-330" in line] == [next(x for x in lines if failure in x)], lines
    assert not any(line.startswith("error    BEM") for line in lines), lines
    assert any(line.startswith("author   : ") and "no pushes today" in line for line in lines), lines
    assert chat.leave() == 0


def test_a_always_allows_the_tool_for_the_rest_of_the_session(dev: DevProcess, chat: Chat) -> None:
    chat.say("Push docs/update")
    chat.question("git_push", '{"ref": "docs/update"}')
    chat.say("a")
    chat.see("approved git_push (always, here)")
    chat.see("result   git_push ok ref=docs/update")
    chat.expect(PROMPT)
    status, listed = http(dev, "GET", f"/sessions/{chat.session_id}/grants?user_id=u1")
    assert status == 200
    [grant] = listed["grants"]
    assert (grant["tool"], grant["scope"]) == ("git_push", "tool")

    chat.say("Push main")  # granted: it runs with no question
    chat.see("result   git_push ok ref=main")
    chat.expect(PROMPT)
    assert remote_refs(dev.data_dir)["refs/heads/main"] == work_commit(dev.data_dir, "main")
    calls = [p for m in chat.messages() for p in m["content"] if p["type"] == "tool_call"]
    # the call's id is its action's: resolved by the grant, nobody asked
    status, unasked = http(dev, "GET", f"/actions/{calls[-1]['tool_call_id']}?user_id=u1")
    assert (status, unasked["status"], unasked["args"]) == (200, "resolved", {"ref": "main"})
    assert unasked["response"]["by"] == {"kind": "grant", "grant_id": grant["grant_id"]}
    assert chat.leave() == 0

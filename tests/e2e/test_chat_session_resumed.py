"""`riverbeam chat --session ID` takes a session up again: its last turns are shown, and an approval left
pending (here asked over HTTP, as a chat stopped with Ctrl-C leaves one) is asked before the prompt; the
answer runs the tool once. In a pseudo-terminal against `riverbeam dev` as a child process."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest
from riverbeam_local.clients.dev_process import DevProcess, running

from tests.support.devstack import (
    assert_none_left,
    http,
    invoke_over_http,
    remote_refs,
    screen,
    spawn_chat,
    work_commit,
)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]
PROMPT = screen("you      >")


@pytest.fixture
def dev(tmp_path: Path) -> Iterator[DevProcess]:
    with running(tmp_path) as process:
        yield process
    assert_none_left(tmp_path)


def test_a_pending_approval_is_asked_before_the_prompt(dev: DevProcess) -> None:
    session_id = str(uuid.uuid4())
    assert invoke_over_http(dev, session_id, "Push docs/update")["interrupted"] is True
    assert remote_refs(dev.data_dir) == {}
    term = spawn_chat(dev, "u1", session_id, columns=200)
    try:
        term.expect(screen("you      > Push docs/update"))  # the last turns, as they were
        term.expect(screen("author   : I will push docs/update."))
        term.expect(screen('Approve git_push {"ref": "docs/update"}? [y/N/a]'))
        term.send("y\r")
        term.expect(screen("result   git_push ok ref=docs/update"))
        term.expect(PROMPT)  # then the prompt, nothing left to ask
        term.send("/quit\r")
        term.expect(pexpect.EOF)
    finally:
        term.close(force=True)
    assert remote_refs(dev.data_dir) == {"refs/heads/docs/update": work_commit(dev.data_dir, "docs/update")}
    status, page = http(dev, "GET", f"/sessions/{session_id}/actions?status=pending&user_id=u1")
    assert status == 200 and page["actions"] == [], page


def test_a_new_session_goes_straight_to_the_prompt(dev: DevProcess) -> None:
    term = spawn_chat(dev, "u1", str(uuid.uuid4()), columns=200)
    try:
        term.expect(PROMPT)
        assert "Approve" not in str(term.before)
        term.send("/quit\r")
        term.expect(pexpect.EOF)
    finally:
        term.close(force=True)

"""`riverbeam chat` in a pseudo-terminal against `riverbeam dev --agents` where `git_push` may not be
granted (`grantable: false`): the question offers no "always" (`[y/N]`), and `a` typed anyway refuses the
push instead of granting it, so the next push is asked about again."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from tests.support.devstack import (
    http,
    remote_refs,
    running_with_agents,
    screen,
    spawn_chat,
    work_commit,
)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

NOT_GRANTABLE = """
agents:
  author:
    tools: [git_push]
    tool_settings:
      git_push: {grantable: false}
"""
QUESTION = 'Approve git_push {"ref": "docs/update"}? [y/N]'


def test_a_tool_that_may_not_be_granted_is_asked_about_without_always(tmp_path: Path) -> None:
    with running_with_agents(tmp_path, NOT_GRANTABLE) as dev:
        session_id = str(uuid.uuid4())
        chat = spawn_chat(dev, "u1", session_id, columns=200)
        try:
            chat.expect(screen("you      >"))
            chat.send("Push docs/update\r")
            chat.expect(screen(QUESTION))  # `[y/N]`, where a grantable tool's question ends `[y/N/a]`
            chat.send("a\r")
            chat.expect(screen("Reason (optional):"))
            chat.send("\r")
            chat.expect(screen("rejected git_push"))
            chat.expect(screen("author   : Understood: I did not push docs/update."))
            assert "(always, here)" not in chat.before
            assert "refs/heads/docs/update" not in remote_refs(dev.data_dir)
            status, grants = http(dev, "GET", f"/sessions/{session_id}/grants?user_id=u1")
            assert (status, grants["grants"]) == (200, [])

            chat.expect(screen("you      >"))
            chat.send("Push docs/update\r")
            chat.expect(screen(QUESTION))  # asked again: nothing was granted
            chat.send("y\r")
            chat.expect(screen("author   : Pushed docs/update."))
        finally:
            chat.close(force=True)
        assert remote_refs(dev.data_dir)["refs/heads/docs/update"] == work_commit(dev.data_dir, "docs/update")

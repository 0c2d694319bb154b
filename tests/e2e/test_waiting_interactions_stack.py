"""Two interactions of one session waiting at once through `riverbeam dev` (the inbox page in two tabs, or
the CLI beside the chat), answered in either order (CONTRACT 3.11): each push reaches the bare remote once,
each run completes. Real HTTP requests to the stack as a child process; git reads the remote."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from riverbeam_local.clients.dev_process import DevProcess, running

from tests.support.devstack import (
    ended_run,
    http,
    invoke_over_http,
    remote_refs,
    work_commit,
)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

REFS = ("docs/update", "main")
ORDERS = {"older first": (0, 1), "newer first": (1, 0)}
PUSH_LOG = "pushes.log"


@pytest.fixture
def dev(tmp_path: Path) -> Iterator[DevProcess]:
    with running(tmp_path) as process:
        # the bare remote logs each ref a push changes: its post-receive hook (run by git's receive-pack and
        # by dulwich's alike) appends the `<old> <new> <ref>` it is given, and a newline (dulwich gives none)
        hook = tmp_path / "remote.git" / "hooks" / "post-receive"
        hook.parent.mkdir(exist_ok=True)
        hook.write_text(f"#!/bin/sh\n(cat; echo) >> '{tmp_path / PUSH_LOG}'\n")
        hook.chmod(0o755)
        yield process


def approve(dev: DevProcess, result: dict[str, Any]) -> str:
    (action,) = result["action_required"]
    body = {
        "agent_name": "author",
        "session_id": result["session_id"],
        "interaction_id": result["interaction_id"],
        "actions": [
            {
                "action_id": action["action_id"],
                "kind": "confirmation",
                "request_id": str(uuid.uuid4()),
                "status": "submitted",
                "payload": {"tool": action["tool"], "args": action["args"]},
            }
        ],
        "auth_context": {"user_id": "u1"},
    }
    status, ack = http(dev, "POST", "/resume", body)
    assert status == 202, ack
    return str(ack["run_id"])


def pushes(data_dir: Path, ref: str) -> list[str]:
    """The commits the pushes set a ref of the bare remote to, one per push."""
    log = data_dir / PUSH_LOG
    updates = [line.split() for line in log.read_text().splitlines()] if log.exists() else []
    return [words[1] for words in updates if words[2:] == [f"refs/heads/{ref}"]]


@pytest.mark.parametrize("order", ORDERS)
def test_two_waiting_interactions_answered_in_either_order(dev: DevProcess, order: str) -> None:
    session_id = str(uuid.uuid4())
    results = [invoke_over_http(dev, session_id, f"Push {ref}") for ref in REFS]
    for result, ref in zip(results, REFS, strict=True):
        assert result["interrupted"] is True, result
        assert [a["args"] for a in result["action_required"]] == [{"ref": ref}]
    assert remote_refs(dev.data_dir) == {}

    for index in ORDERS[order]:
        run = ended_run(dev, approve(dev, results[index]))
        assert run["status"] == "completed" and run.get("error") is None, run
        status, interaction = http(dev, "GET", f"/interactions/{results[index]['interaction_id']}?user_id=u1")
        assert status == 200 and interaction["status"] == "completed", interaction

    for ref in REFS:  # each push reached the remote, once
        assert pushes(dev.data_dir, ref) == [work_commit(dev.data_dir, ref)]
    assert remote_refs(dev.data_dir) == {f"refs/heads/{ref}": work_commit(dev.data_dir, ref) for ref in REFS}
    status, page = http(dev, "GET", f"/sessions/{session_id}/messages?user_id=u1")
    assert status == 200, page
    results_of = [
        part["tool_call_id"]
        for m in page["messages"]
        for part in m["content"]
        if part["type"] == "tool_result"
    ]
    asked = [str(r["action_required"][0]["action_id"]) for r in results]
    assert sorted(results_of) == sorted(asked)  # one tool result each, no other
    for result in results:
        status, action = http(dev, "GET", f"/actions/{result['action_required'][0]['action_id']}?user_id=u1")
        assert status == 200 and action["status"] == "resolved", action
        assert action["outcome"]["status"] == "ok", action
    assert "Traceback" not in dev.stderr_text(), dev.stderr_text()

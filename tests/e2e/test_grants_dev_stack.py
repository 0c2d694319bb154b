"""Standing grants through `riverbeam dev` as a child process: over its HTTP API (a resume that grants,
GET /sessions/{id}/grants, DELETE /sessions/{id}/grants/{grant_id}) and with `riverbeam resume --grant`,
`riverbeam grants` and `riverbeam revoke`, as a script runs them; another user sees the session's 404."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from riverbeam_local.clients.dev_process import DevProcess, running

from tests.support.devstack import (
    assert_none_left,
    ended_run,
    http,
    invoke_over_http,
    remote_refs,
    riverbeam,
    secret_of,
)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]


@pytest.fixture
def dev(tmp_path: Path) -> Iterator[DevProcess]:
    data_dir = tmp_path / "data"
    with running(data_dir) as process:
        yield process
    assert_none_left(data_dir)


def cli(dev: DevProcess, *args: str, user: str = "u1") -> Any:
    return riverbeam(*args, "--url", dev.http_url, "--user", user, "--secret", secret_of(dev))


def test_a_grant_made_listed_and_revoked_over_http(dev: DevProcess) -> None:
    session_id = str(uuid.uuid4())
    asked = invoke_over_http(dev, session_id, "Push docs/update")
    [action] = asked["action_required"]
    envelope = {
        "action_id": action["action_id"],
        "status": "submitted",
        "payload": {"tool": "git_push", "args": action["args"]},
        "grant": "tool",
    }
    resume = {
        "agent_name": "author",
        "session_id": session_id,
        "interaction_id": asked["interaction_id"],
        "actions": [envelope],
        "auth_context": {"user_id": "u1"},
    }
    status, ack = http(dev, "POST", "/resume", resume)
    assert status == 202, ack
    assert ended_run(dev, ack["run_id"])["status"] == "completed"

    status, listed = http(dev, "GET", f"/sessions/{session_id}/grants?user_id=u1")
    assert status == 200
    [grant] = listed["grants"]
    assert (grant["tool"], grant["scope"], grant["created_by"]) == ("git_push", "tool", "u1")
    status, refused = http(dev, "GET", f"/sessions/{session_id}/grants?user_id=mallory")
    assert (status, refused["error"]["code"]) == (404, "BEM-020")

    unasked = invoke_over_http(dev, session_id, "Push main")  # the grant covers it: pushed with no question
    assert not unasked["interrupted"] and "refs/heads/main" in remote_refs(dev.data_dir)

    path = f"/sessions/{session_id}/grants/{grant['grant_id']}"
    status, refused = http(dev, "DELETE", path + "?user_id=mallory")
    assert (status, refused["error"]["code"]) == (404, "BEM-020")
    assert http(dev, "DELETE", path + "?user_id=u1") == (204, None)
    status, refused = http(dev, "DELETE", path + "?user_id=u1")
    assert (status, refused["error"]["code"]) == (404, "BEM-087")
    assert http(dev, "GET", f"/sessions/{session_id}/grants?user_id=u1")[1]["grants"] == []
    assert invoke_over_http(dev, session_id, "Push main")["interrupted"]  # revoked: it asks again


def test_grants_and_revoke_from_the_command_line(dev: DevProcess) -> None:
    session_id = str(uuid.uuid4())
    asked = invoke_over_http(dev, session_id, "Push docs/update")
    action_id = asked["action_required"][0]["action_id"]
    approved = cli(dev, "resume", "--approve", action_id, "--grant", "args")
    assert approved.returncode == 0, approved.stderr

    listed = cli(dev, "grants", session_id)
    assert listed.returncode == 0, listed.stderr
    [grant] = json.loads(listed.stdout)["grants"]
    assert (grant["scope"], grant["args_sha256"]) == ("args", asked["action_required"][0]["args_sha256"])
    other = cli(dev, "grants", session_id, user="mallory")
    assert other.returncode == 1 and json.loads(other.stderr)["error"]["code"] == "BEM-020"

    revoked = cli(dev, "revoke", session_id, grant["grant_id"])
    assert (revoked.returncode, revoked.stdout) == (0, "")
    again = cli(dev, "revoke", session_id, grant["grant_id"])
    assert again.returncode == 1 and json.loads(again.stderr)["error"]["code"] == "BEM-087"
    assert json.loads(cli(dev, "grants", session_id).stdout)["grants"] == []

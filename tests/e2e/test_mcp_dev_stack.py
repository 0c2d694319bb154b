"""`riverbeam dev` with an agents file naming an MCP server on 127.0.0.1: through the stack's HTTP API, the
offline model's `call <server>/<tool> <args JSON>` asks for approval, and the server is called once, after
the person approves."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import pytest
from riverbeam_local.clients.dev_process import running

from tests.support.devstack import TIMEOUT_SECONDS, http
from tests.support.mcp_server import mcp_server

pytestmark = pytest.mark.e2e


def test_an_mcp_tool_asks_then_runs_once_through_the_stack(tmp_path: Path) -> None:
    with mcp_server() as release:
        agents = tmp_path / "agents.json"
        agents.write_text(
            json.dumps(
                {
                    "mcp_servers": {"release": {"url": release.url}},
                    "agents": {"releaser": {"tools": ["release/deploy"]}},
                }
            )
        )
        with running(tmp_path / "data", args=("--agents", str(agents))) as dev:
            user, session_id = {"user_id": "ana"}, str(uuid.uuid4())
            text = 'call release/deploy {"service": "web", "version": "1.2.0"}'
            body = {
                "agent_name": "releaser",
                "session_id": session_id,
                "content": [{"type": "text", "text": text}],
                "auth_context": user,
            }
            status, result = http(dev, "POST", "/invoke", body)
            assert status == 200 and result["interrupted"], result
            (action,) = result["action_required"]
            assert (action["tool"], action["args"]) == (
                "release/deploy",
                {"service": "web", "version": "1.2.0"},
            )
            assert release.calls["deploy"] == 0

            resume = {
                "agent_name": "releaser",
                "session_id": session_id,
                "interaction_id": result["interaction_id"],
                "actions": [
                    {"action_id": action["action_id"], "kind": "confirmation", "status": "submitted"}
                ],
                "auth_context": user,
            }
            status, ack = http(dev, "POST", "/resume", resume)
            assert status == 202, ack
            deadline = time.monotonic() + TIMEOUT_SECONDS
            while time.monotonic() < deadline:
                status, stored = http(dev, "GET", f"/actions/{action['action_id']}?user_id=ana")
                if stored.get("outcome"):
                    break
                time.sleep(0.2)
            assert stored["outcome"]["error"] is None, stored
            assert release.calls["deploy"] == 1
            assert release.args == [("deploy", {"service": "web", "version": "1.2.0", "replicas": 1})]

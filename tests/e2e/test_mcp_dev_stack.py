"""`riverbeam dev` with an agents file naming an MCP server on 127.0.0.1: through the stack's HTTP API, the
offline model's `call <server>/<tool> <args JSON>` asks for approval, and the server is called once, after
the person approves; a server down at start disables its agent alone, and a backtracking `pattern` in a
server's schema never freezes the stack."""

from __future__ import annotations

import json
import socket
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from riverbeam_local.clients.dev_process import DevProcess, running

from tests.support.devstack import TIMEOUT_SECONDS, http
from tests.support.hostile_mcp import hostile_mcp_server, tool
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


def _agents(path: Path, url: str, agents: dict[str, object]) -> Path:
    path.write_text(json.dumps({"mcp_servers": {"release": {"url": url, "timeout": 10}}, "agents": agents}))
    return path


def _invoke(dev: DevProcess, agent: str, text: str) -> tuple[int, dict[str, Any]]:
    body = {
        "agent_name": agent,
        "session_id": str(uuid.uuid4()),
        "content": [{"type": "text", "text": text}],
        "auth_context": {"user_id": "ana"},
    }
    return http(dev, "POST", "/invoke", body)


def test_a_server_down_at_start_disables_its_agent_and_the_others_work(tmp_path: Path) -> None:
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{free.getsockname()[1]}/mcp"  # nothing listens there
    agents = _agents(
        tmp_path / "agents.json",
        url,
        {"releaser": {"tools": ["release/*"]}, "author": {"tools": ["list_files"]}},
    )
    with running(tmp_path / "data", args=("--agents", str(agents))) as dev:
        status, disabled = _invoke(dev, "releaser", "hello")
        assert status == 503 and disabled["error"]["code"] == "BEM-362", disabled
        assert "the MCP server 'release' cannot be reached" in disabled["error"]["message"]
        status, answered = _invoke(dev, "author", "hello")
        assert status == 200 and answered["content"], answered
        said = dev.stderr_text()
    warned = [line for line in said.splitlines() if "the agent 'releaser' is disabled" in line]
    assert warned and "WARNING" in warned[0], said
    assert "Traceback" not in said


def test_a_backtracking_pattern_never_freezes_the_stack(tmp_path: Path) -> None:
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string", "pattern": "^(a+)+$"}},
        "patternProperties": {"^(b+)+$": {"type": "string"}},
        "required": ["name"],
    }
    evil = "a" * 48 + "!"  # backtracking engines take 2^48 steps to refuse it
    with hostile_mcp_server() as hostile:
        hostile.tools = [tool("check", schema)]
        agents = _agents(tmp_path / "agents.json", hostile.url, {"releaser": {"tools": ["release/check"]}})
        with running(tmp_path / "data", args=("--agents", str(agents))) as dev:
            call = json.dumps({"name": evil, "b" * 48 + "!": "x"})
            outcome = _approved_outcome(dev, f"call release/check {call}")
            assert outcome["error"]["code"] == "BEM-332", outcome  # refused at once: the name fits no pattern
            assert "name" in outcome["error"]["message"]
            status, answered = _invoke(dev, "releaser", "hello")  # and the stack still answers
            assert status == 200, answered
    assert hostile.calls == []


def test_a_backtracking_pattern_in_an_output_schema_never_freezes_the_stack(tmp_path: Path) -> None:
    output = {"type": "object", "properties": {"id": {"type": "string", "pattern": "^(a+)+$"}}}
    with hostile_mcp_server() as hostile:
        hostile.tools = [tool("report", outputSchema=output)]
        hostile.results = {"report": {"content": [], "structuredContent": {"id": "a" * 48 + "!"}}}
        agents = _agents(tmp_path / "agents.json", hostile.url, {"releaser": {"tools": ["release/report"]}})
        with running(tmp_path / "data", args=("--agents", str(agents))) as dev:
            outcome = _approved_outcome(dev, 'call release/report {"service": "web"}')
            assert outcome["error"]["code"] == "BEM-361", outcome
            assert "does not fit its output schema" in outcome["error"]["message"]
            status, answered = _invoke(dev, "releaser", "hello")  # and the stack still answers
            assert status == 200, answered
    assert hostile.calls == [("report", {"service": "web"})]


def _approved_outcome(dev: DevProcess, text: str) -> dict[str, Any]:
    """The outcome of the call `text` proposes to the agent `releaser`, approved where it is asked."""
    status, result = _invoke(dev, "releaser", text)
    assert status == 200, result
    for action in result["action_required"]:  # asked (the args are checked as the call runs)
        resume = {
            "agent_name": "releaser",
            "session_id": result["session_id"],
            "interaction_id": result["interaction_id"],
            "actions": [{"action_id": action["action_id"], "kind": "confirmation", "status": "submitted"}],
            "auth_context": {"user_id": "ana"},
        }
        assert http(dev, "POST", "/resume", resume)[0] == 202
    return _tool_outcome(dev, result["session_id"])


def _tool_outcome(dev: DevProcess, session_id: str) -> dict[str, Any]:
    """The first tool message's result of the session, waited for (the resume runs after its 202)."""
    deadline = time.monotonic() + TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        status, listed = http(dev, "GET", f"/sessions/{session_id}/messages?user_id=ana")
        assert status == 200, listed
        for message in listed["messages"]:
            if message["role"] == "tool":
                return dict(message["content"][0])
        time.sleep(0.2)
    raise AssertionError(f"no tool message in {TIMEOUT_SECONDS} s")

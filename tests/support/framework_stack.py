"""The dev-stack check every framework runner passes: an agent module (`desk.py`, its `agent` attribute, a
gated `pay` tool that appends to `paid.txt` beside it, an offline model that calls `pay(bob, 5)` and then
says `told <result>`) named in agents.yaml, run by `riverbeam dev` as a child process and driven over
HTTP as any client: it asks, the approval resumes it in the stack's worker, the tool runs once and the
model is told."""

from __future__ import annotations

import uuid
from pathlib import Path

from tests.support.devstack import ended_run, http, invoke_over_http, running_with_agents

AGENTS = """
agents:
  author:
    framework: {framework}
    agent: desk:agent
"""


def asks_and_runs_the_tool_once(tmp_path: Path, framework: str, desk: str) -> None:
    """Run `desk` (the agent module's text) under `framework` through the stack; assert each step."""
    (tmp_path / "agent_code").mkdir()
    (tmp_path / "agent_code" / "desk.py").write_text(desk, encoding="utf-8")
    ran = tmp_path / "agent_code" / "paid.txt"
    with running_with_agents(tmp_path, AGENTS.format(framework=framework)) as dev:
        session_id = str(uuid.uuid4())
        asked = invoke_over_http(dev, session_id, "Pay bob")
        assert asked["interrupted"] and not ran.exists()
        [action] = asked["action_required"]
        assert (action["tool"], action["args"]) == ("pay", {"to": "bob", "amount": 5})
        answer = {
            "action_id": action["action_id"],
            "status": "submitted",
            "payload": {"tool": "pay", "args": action["args"]},
        }
        body = {
            "agent_name": "author",
            "session_id": session_id,
            "interaction_id": asked["interaction_id"],
            "actions": [answer],
            "auth_context": {"user_id": "u1"},
        }
        status, ack = http(dev, "POST", "/resume", body)
        assert status == 202, ack
        assert ended_run(dev, ack["run_id"])["status"] == "completed"
        assert ran.read_text() == "bob 5\n"
        status, page = http(dev, "GET", f"/sessions/{session_id}/messages?user_id=u1")
        assert status == 200
        said = [
            p["text"]
            for m in page["messages"]
            if m["role"] == "ai"
            for p in m["content"]
            if p["type"] == "text"
        ]
        assert said == ["told paid 5 to bob"]

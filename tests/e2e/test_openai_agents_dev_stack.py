"""An OpenAI Agents SDK agent from agents.yaml (`framework: openai_agents`, `agent: module:attribute` in the
code folder) through `riverbeam dev` as a child process, over HTTP as any client: its gated tool asks, the
approval resumes it (its RunState read back) in the stack's worker, the tool runs once and the model is
told."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from tests.support.devstack import ended_run, http, invoke_over_http, running_with_agents

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

# the agent, its offline model (a person's message: pay bob 5; a tool result: what it said) and a tool
# that counts its runs in a file beside the code
DESK = '''
from pathlib import Path

from agents import Agent, function_tool
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call

RAN = Path(__file__).with_name("paid.txt")


def model(call):
    items = [i for i in call.input if isinstance(i, dict)]
    returned = [i["output"] for i in items if i.get("type") == "function_call_output"]
    if returned:
        return [assistant_message("told " + " | ".join(map(str, returned)))]
    return [function_call("pay", {"to": "bob", "amount": 5}, call_id="call-1")]


@function_tool(needs_approval=True)
def pay(to: str, amount: int) -> str:
    """Pay `amount` to `to`."""
    with RAN.open("a") as ran:
        ran.write(f"{to} {amount}\\n")
    return f"paid {amount} to {to}"


agent = Agent(name="desk", model=ScriptedModel([ModelStep.respond(model)] * 20), tools=[pay])
'''

AGENTS = """
agents:
  author:
    framework: openai_agents
    agent: desk:agent
"""


def test_an_openai_agents_sdk_agent_asks_and_its_approval_runs_the_tool_once(tmp_path: Path) -> None:
    (tmp_path / "agent_code").mkdir()
    (tmp_path / "agent_code" / "desk.py").write_text(DESK, encoding="utf-8")
    ran = tmp_path / "agent_code" / "paid.txt"
    with running_with_agents(tmp_path, AGENTS) as dev:
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

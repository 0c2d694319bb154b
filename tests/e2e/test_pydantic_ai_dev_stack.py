"""A Pydantic AI agent from agents.yaml (`framework: pydantic_ai`, `agent: module:attribute` in the code
folder) through `riverbeam dev` as a child process, over HTTP as any client: its gated tool asks, the
approval resumes it in the stack's worker, the tool runs once and the model is told."""

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

from pydantic_ai import Agent
from pydantic_ai import messages as pai
from pydantic_ai.models.function import DeltaToolCall, FunctionModel

RAN = Path(__file__).with_name("paid.txt")


async def model(messages, info):
    returned = [p.content for p in messages[-1].parts if isinstance(p, pai.ToolReturnPart)]
    if returned:
        yield "told " + " | ".join(map(str, returned))
    else:
        yield {0: DeltaToolCall(name="pay", json_args='{"to": "bob", "amount": 5}')}


agent = Agent(FunctionModel(stream_function=model), name="desk")


@agent.tool_plain(requires_approval=True)
def pay(to: str, amount: int) -> str:
    """Pay `amount` to `to`."""
    with RAN.open("a") as ran:
        ran.write(f"{to} {amount}\\n")
    return f"paid {amount} to {to}"
'''

AGENTS = """
agents:
  author:
    framework: pydantic_ai
    agent: desk:agent
"""


def test_a_pydantic_ai_agent_asks_and_its_approval_runs_the_tool_once(tmp_path: Path) -> None:
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

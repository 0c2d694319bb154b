"""A LangGraph agent from agents.yaml (`framework: langgraph`, `agent: module:attribute` in the code
folder: a `create_agent` graph with HumanInTheLoopMiddleware) through `riverbeam dev` as a child process,
over HTTP as any client: its marked tool asks, the approval resumes it in the stack's worker from the
kept checkpoint, the tool runs once and the model is told."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from tests.support.devstack import ended_run, http, invoke_over_http, running_with_agents

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

# the agent, LangChain's fake chat model made to call `pay` (then to say what its result told it), and
# a tool that counts its runs in a file beside the code
DESK = '''
from pathlib import Path

from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool

RAN = Path(__file__).with_name("paid.txt")


class Model(GenericFakeChatModel):
    def bind_tools(self, tools, **kwargs):
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        if isinstance(messages[-1], ToolMessage):
            said = AIMessage(content="told " + str(messages[-1].content))
        else:
            call = {"id": "c1", "name": "pay", "args": {"to": "bob", "amount": 5}}
            said = AIMessage(content="", tool_calls=[call])
        return ChatResult(generations=[ChatGeneration(message=said)])


@tool
def pay(to: str, amount: int) -> str:
    """Pay `amount` to `to`."""
    with RAN.open("a") as ran:
        ran.write(f"{to} {amount}\\n")
    return f"paid {amount} to {to}"


model = Model(messages=iter(()), disable_streaming=True)
agent = create_agent(model, [pay], middleware=[HumanInTheLoopMiddleware(interrupt_on={"pay": True})])
'''

AGENTS = """
agents:
  author:
    framework: langgraph
    agent: desk:agent
"""


def test_a_langgraph_agent_asks_and_its_approval_runs_the_tool_once(tmp_path: Path) -> None:
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

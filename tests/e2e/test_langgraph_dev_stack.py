"""A LangGraph agent from agents.yaml (`framework: langgraph`, `agent: module:attribute` in the code
folder: a `create_agent` graph with HumanInTheLoopMiddleware) through `riverbeam dev` as a child process,
over HTTP as any client: its marked tool asks, the approval resumes it in the stack's worker from the
kept checkpoint, the tool runs once and the model is told."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.framework_stack import asks_and_runs_the_tool_once

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


def test_a_langgraph_agent_asks_and_its_approval_runs_the_tool_once(tmp_path: Path) -> None:
    asks_and_runs_the_tool_once(tmp_path, "langgraph", DESK)

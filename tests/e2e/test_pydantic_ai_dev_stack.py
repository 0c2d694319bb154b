"""A Pydantic AI agent from agents.yaml (`framework: pydantic_ai`, `agent: module:attribute` in the code
folder) through `riverbeam dev` as a child process, over HTTP as any client: its gated tool asks, the
approval resumes it in the stack's worker, the tool runs once and the model is told."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.framework_stack import asks_and_runs_the_tool_once

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


def test_a_pydantic_ai_agent_asks_and_its_approval_runs_the_tool_once(tmp_path: Path) -> None:
    asks_and_runs_the_tool_once(tmp_path, "pydantic_ai", DESK)

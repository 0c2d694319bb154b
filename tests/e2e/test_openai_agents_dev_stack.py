"""An OpenAI Agents SDK agent from agents.yaml (`framework: openai_agents`, `agent: module:attribute` in the
code folder) through `riverbeam dev` as a child process, over HTTP as any client: its gated tool asks, the
approval resumes it (its RunState read back) in the stack's worker, the tool runs once and the model is
told."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.framework_stack import asks_and_runs_the_tool_once

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


def test_an_openai_agents_sdk_agent_asks_and_its_approval_runs_the_tool_once(tmp_path: Path) -> None:
    asks_and_runs_the_tool_once(tmp_path, "openai_agents", DESK)

"""A Strands agent from agents.yaml (`framework: strands`, `agent: module:attribute` in the code folder)
through `riverbeam dev` as a child process, over HTTP as any client: the tool its own hook interrupts asks,
the approval resumes it in the stack's worker (the agent's snapshot from the store), the tool runs once
and the model is told."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.framework_stack import asks_and_runs_the_tool_once

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

# the agent, its offline model (a person's message: pay bob 5; a tool result: what it said), the user's
# own HITL hook on `pay`, and a tool that counts its runs in a file beside the code
DESK = '''
import json
from pathlib import Path

from strands import Agent, tool
from strands.hooks import BeforeToolCallEvent
from strands.models import Model

RAN = Path(__file__).with_name("paid.txt")


class Desk(Model):
    def update_config(self, **config):
        pass

    def get_config(self):
        return {}

    async def structured_output(self, *args, **kwargs):
        raise NotImplementedError
        yield

    async def stream(self, messages, tool_specs=None, system_prompt=None, **kwargs):
        results = [b["toolResult"] for b in messages[-1]["content"] if "toolResult" in b]
        yield {"messageStart": {"role": "assistant"}}
        if results:
            said = " | ".join(c["text"] for r in results for c in r["content"])
            yield {"contentBlockDelta": {"delta": {"text": "told " + said}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "end_turn"}}
        else:
            yield {"contentBlockStart": {"start": {"toolUse": {"name": "pay", "toolUseId": "c1"}}}}
            args = json.dumps({"to": "bob", "amount": 5})
            yield {"contentBlockDelta": {"delta": {"toolUse": {"input": args}}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "tool_use"}}


@tool
def pay(to: str, amount: int) -> str:
    """Pay `amount` to `to`."""
    with RAN.open("a") as ran:
        ran.write(f"{to} {amount}\\n")
    return f"paid {amount} to {to}"


def approve(event: BeforeToolCallEvent) -> None:
    if event.tool_use["name"] == "pay":
        answer = event.interrupt("approve-pay", reason="pay?")
        if answer not in (True, "y", "yes"):
            event.cancel_tool = str(answer)


def agent():
    made = Agent(model=Desk(), tools=[pay], name="desk", callback_handler=None)
    made.hooks.add_callback(BeforeToolCallEvent, approve)
    return made
'''


def test_a_strands_agent_asks_and_its_approval_runs_the_tool_once(tmp_path: Path) -> None:
    asks_and_runs_the_tool_once(tmp_path, "strands", DESK)

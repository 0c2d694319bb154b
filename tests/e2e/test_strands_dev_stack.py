"""A Strands agent from agents.yaml (`framework: strands`, `agent: module:attribute` in the code folder)
through `riverbeam dev` as a child process, over HTTP as any client: the tool its own hook interrupts asks,
the approval resumes it in the stack's worker (the agent's snapshot from the store), the tool runs once
and the model is told."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from tests.support.devstack import ended_run, http, invoke_over_http, running_with_agents

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

AGENTS = """
agents:
  author:
    framework: strands
    agent: desk:agent
"""


def test_a_strands_agent_asks_and_its_approval_runs_the_tool_once(tmp_path: Path) -> None:
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

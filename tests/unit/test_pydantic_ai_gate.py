"""The gate inside a Pydantic AI run, on its own: an approved call whose args the framework would run are not
the ones asked about does not run (BEM-084), and the model is told."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest
from beam_store import args_sha256
from pydantic_ai import messages as pai
from pydantic_ai.exceptions import ToolFailed
from riverbeam.agent.registry import AgentInput, ResolvedAction
from riverbeam.frameworks.calls import GatedCalls
from riverbeam.frameworks.pydantic_ai_gate import RiverbeamGate


async def run(gate: RiverbeamGate, call: pai.ToolCallPart) -> Any:
    """The call through the gate's hook, its tool saying what it ran with."""

    async def tool(args: dict[str, Any]) -> str:
        return f"ran with {args}"

    ctx: Any = SimpleNamespace(tool_call_approved=True)
    args = call.args_as_dict()
    return await gate.wrap_tool_execute(ctx, call=call, tool_def=Any, args=args, handler=tool)  # type: ignore[arg-type]


def test_an_approved_call_with_other_args_than_those_asked_about_does_not_run() -> None:
    frames: list[Any] = []
    input = AgentInput(agent_name="desk", session_id="s", interaction_id="i", run_id="r", user_id="u1")
    calls = GatedCalls(input, frames.append)
    asked = {"to": "bob", "amount": 5}
    answer = ResolvedAction(
        action_id=calls.action_id("c1"),
        status="submitted",
        tool="pay",
        args=asked,
        args_sha256=args_sha256(asked),
    )
    gate = RiverbeamGate(calls, approved={"c1": answer}, asked_args={"c1": asked})
    other = pai.ToolCallPart("pay", {"to": "eve", "amount": 5}, tool_call_id="c1")  # not what was asked
    with pytest.raises(ToolFailed, match="BEM-084"):
        asyncio.run(run(gate, other))
    part = gate.parts["c1"]
    assert (part.status, part.error.code if part.error else None) == ("refused", "BEM-084")
    assert [(f.type, f.status) for f in frames] == [("tool_result", "refused")]


def test_an_approved_call_with_the_args_asked_about_runs() -> None:
    input = AgentInput(agent_name="desk", session_id="s", interaction_id="i", run_id="r", user_id="u1")
    calls = GatedCalls(input, lambda frame: None)
    asked = {"to": "bob", "amount": 5}
    answer = ResolvedAction(
        action_id=calls.action_id("c1"),
        status="submitted",
        tool="pay",
        args=asked,
        args_sha256=args_sha256(asked),
    )
    gate = RiverbeamGate(calls, approved={"c1": answer}, asked_args={"c1": asked})
    call = pai.ToolCallPart("pay", dict(asked), tool_call_id="c1")
    assert asyncio.run(run(gate, call)) == "ran with " + str(asked)
    assert "c1" in gate.allowed and gate.parts["c1"].output == "ran with " + str(asked)

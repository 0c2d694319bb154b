"""Two interactions of one session waiting for approval at once (two browser tabs, the CLI beside the
chat), answered in either order: a beam whose author asks to push the branch each message names, its
pushes counted, and the conversations its model was given, in outline."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from beam_store import BeamStore, TextPart, ToolCallPart, ToolResultPart
from riverbeam import AgentResult, ModelTurn, NewMessage, RiverBeam, ScriptedModel, ToolAgentRunner, ToolCall

from tests.support.agents import PushCounter, answer_refusal, invoke_body, resume_body

REFS = ("docs/update", "main")
ORDERS = {"older first": (0, 1), "newer first": (1, 0)}


def ask_to_push(conversation: Sequence[NewMessage]) -> ModelTurn:
    """Turn 0 of each interaction: push the branch its person's message names."""
    said = " ".join(p.text for p in conversation[-1].content if isinstance(p, TextPart))
    ref = re.sub(r"^Push ", "", said)
    return ModelTurn(text=f"I will push {ref}.", tool_calls=[ToolCall(name="git_push", args={"ref": ref})])


def pushing_beam(store: BeamStore) -> tuple[RiverBeam, PushCounter, ScriptedModel]:
    counter = PushCounter()
    model = ScriptedModel([ask_to_push, answer_refusal])
    beam = RiverBeam(store)
    beam.register_agent("author", ToolAgentRunner(model=model, tools=[counter.tool()]))
    return beam, counter, model


def both_waiting(beam: RiverBeam) -> list[AgentResult]:
    """One session, one interaction per ref, each waiting for its push to be approved."""
    first = beam.invoke(invoke_body(text=f"Push {REFS[0]}"))
    assert isinstance(first, AgentResult)
    second = beam.invoke(invoke_body(session_id=first.session_id, text=f"Push {REFS[1]}"))
    assert isinstance(second, AgentResult)
    for result, ref in zip((first, second), REFS, strict=True):
        assert result.interrupted, result
        assert [(a.tool, a.args) for a in result.action_required] == [("git_push", {"ref": ref})]
    return [first, second]


def answer(beam: RiverBeam, result: AgentResult) -> Any:
    return beam.resume(resume_body(result))


def outline(conversation: Sequence[NewMessage]) -> list[str]:
    """A conversation as its person's messages, tool calls, tool results and replies (a person's answer
    to an action left out: its tool result tells it), e.g. `human Push main`, `call main`, `result main`."""
    lines: list[str] = []
    for message in conversation:
        for part in message.content:
            if isinstance(part, TextPart) and part.text:
                lines.append(f"{message.role} {part.text}")
            elif isinstance(part, ToolCallPart):
                lines.append(f"call {part.args['ref']}")
            elif isinstance(part, ToolResultPart):
                lines.append(f"result {part.status}")
    return lines


def whole(ref: str, *, ended: bool) -> list[str]:
    """An interaction that pushed `ref`, in outline: up to its tool's result, or to its reply (ended)."""
    lines = [f"human Push {ref}", f"ai I will push {ref}.", f"call {ref}", "result ok"]
    return [*lines, "ai Done: ok."] if ended else lines

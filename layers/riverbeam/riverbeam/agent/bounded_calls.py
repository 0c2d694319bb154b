"""The model's tool calls as the built-in runner keeps them: a call whose args nest too deep (BEM-045) or
are too large (BEM-046) is the model's malformed call. It is kept without its args (stored whole, it
would fail the store, and the policy could not read it), never decided nor asked about, and its result
tells the model why, as any tool error does: the run goes on."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

from beam_store.records import ErrorInfo, ToolCallPart, ToolResultPart, new_id

from ..args_limits import check_call_args
from ..errors import BeamError
from ..models import ErrorFrame, ToolCallFrame, ToolResultFrame
from .registry import Emit

if TYPE_CHECKING:
    from .llm import ToolCall


class ParsedCall(NamedTuple):
    part: ToolCallPart
    # why it cannot run (its args out of bounds), else None
    refusal: ErrorInfo | None


def parsed_call(call: ToolCall) -> ParsedCall:
    """The call with a fresh id (its action's, where it is asked about), checked against the bounds."""
    try:
        check_call_args("args", call.args)
    except BeamError as error:
        part = ToolCallPart(tool_call_id=new_id(), name=call.name, args={}, model_call_id=call.model_call_id)
        return ParsedCall(part, ErrorInfo(code=error.code, message=error.message))
    part = ToolCallPart(
        tool_call_id=new_id(), name=call.name, args=call.args, model_call_id=call.model_call_id
    )
    return ParsedCall(part, None)


def parsed_calls(calls: Sequence[ToolCall]) -> list[ParsedCall]:
    return [parsed_call(c) for c in calls]


def refused(call: ParsedCall, emit: Emit) -> ToolResultPart:
    """The result of a call refused for its args' bounds: its frames, an error naming the code."""
    part, error = call.part, call.refusal
    assert error is not None  # only refused calls come here
    emit(ToolCallFrame(tool_call_id=part.tool_call_id, name=part.name, args={}))
    emit(ErrorFrame(code=error.code, message=error.message))
    emit(ToolResultFrame(tool_call_id=part.tool_call_id, name=part.name, status="error", error=error))
    return ToolResultPart(tool_call_id=part.tool_call_id, name=part.name, status="error", error=error)

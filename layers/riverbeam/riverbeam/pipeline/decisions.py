"""Calls decided without asking a person (CONTRACT 10): the Actions the run's closing write keeps for
them, and the decision of each `action_required` entry of a runner that does not decide its own calls.

ToolAgentRunner decides each call itself, before it runs (`decides_calls`). Any other runner asks for
approval with `action_required`: each entry is decided here; a denied one is told to the runner as a
cancelled answer (and a `refused` tool message), an allowed one as a submitted answer, and the runner
goes on in the same run with those answers, as on a resume, until all it asks for waits for a person.
An entry whose args do not fit its tool's schema (the runner's `validate_args`, where it has one), or hold a
number the policy cannot read, is never decided nor asked about (CONTRACT 3.12): it is told to the runner as
a cancelled answer with the error, and as an `error` tool message naming the fields; no Action is kept."""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING

from beam_store import ErrorInfo, Message, ToolResultPart

from ..errors import BeamError
from ..models import ActionRequest, AgentResult, NewMessage, ToolResultFrame
from ..policy.decision import DecidedCall, Decision
from ..policy.gate import verdict

if TYPE_CHECKING:
    from ..agent.registry import AgentInput, AgentRunner, Emit, ResolvedAction
    from ..policy.gate import CallGate

# how many times a run goes on after calls decided without asking, at most (a runner that keeps asking)
MAX_DECIDED_ROUNDS = 16


def decide_requests(
    runner: AgentRunner,
    input: AgentInput,
    result: AgentResult,
    gate: CallGate,
    emit: Emit,
    stored: Collection[str] = (),
) -> AgentResult:
    """`result` with each of its `action_required` entries decided: those that ask stay; the runner is
    run again with the others answered, as often as it asks for calls decided without asking. An entry
    that is an action already `stored` (asked for by an earlier run, still waiting) is left as it is."""
    from .execute import checked_result

    for _ in range(MAX_DECIDED_ROUNDS):
        decided: list[DecidedCall] = []
        unfit: list[ToolResultPart] = []
        for request in (r for r in result.action_required if r.action_id not in stored):
            verdict = _verdict(runner, gate, request)
            if isinstance(verdict, ToolResultPart):
                unfit.append(verdict)
            elif verdict.effect != "ask":
                decided.append(DecidedCall(request.action_id or "", request.tool, request.args, verdict))
        if not decided and not unfit:
            return result
        told = [*_told(decided, emit), *_told_unfit(unfit, emit)]
        gone = {c.action_id for c in decided} | {p.tool_call_id for p in unfit}
        asks = [r for r in result.action_required if r.action_id not in gone]
        so_far = _as_stored(input, [*(result.messages or _replied(result)), *told])
        again = input.model_copy(update={"history": [*input.history, *so_far], "actions": []})
        again.actions = [*(_answer(c) for c in decided), *(_unfit_answer(p, result) for p in unfit)]
        following = checked_result(runner.run(again, emit))
        result = _merged(result, told, decided, following, asks)
    raise BeamError("BEM-041", f"the agent asked for more than {MAX_DECIDED_ROUNDS} rounds of decided calls")


def _verdict(runner: AgentRunner, gate: CallGate, request: ActionRequest) -> Decision | ToolResultPart:
    """The entry's decision, or the error result of an entry that cannot run (never decided)."""
    validate = getattr(runner, "validate_args", None)
    found = verdict(
        gate,
        request.tool,
        request.args,
        confirm_required=True,
        validate=validate if callable(validate) else None,
    )
    if isinstance(found, ErrorInfo):
        call_id = request.action_id or ""
        return ToolResultPart(tool_call_id=call_id, name=request.tool, status="error", error=found)
    assert found is not None  # a gate always decides
    return found


def _told_unfit(unfit: list[ToolResultPart], emit: Emit) -> list[NewMessage]:
    for part in unfit:
        emit(
            ToolResultFrame(tool_call_id=part.tool_call_id, name=part.name, status="error", error=part.error)
        )
    return [NewMessage(role="tool", content=[part]) for part in unfit]


def _unfit_answer(part: ToolResultPart, result: AgentResult) -> ResolvedAction:
    from ..agent.registry import ResolvedAction

    request = next(r for r in result.action_required if r.action_id == part.tool_call_id)
    said = f"{part.error.code}: {part.error.message}" if part.error else "the call cannot run"
    return ResolvedAction(
        action_id=part.tool_call_id, status="cancelled", tool=part.name, args=dict(request.args), reason=said
    )


def _told(decided: list[DecidedCall], emit: Emit) -> list[NewMessage]:
    messages = []
    for call in decided:
        if call.decision.effect == "deny":
            from ..telemetry import spans  # a run's only: writes imports this module in every function

            spans.call_denied(
                tool=call.tool, call_id=call.action_id, decided_by=spans.decided_by(call.decision.by())
            )
            part = call.refusal()
            emit(
                ToolResultFrame(
                    tool_call_id=part.tool_call_id, name=part.name, status="refused", error=part.error
                )
            )
            messages.append(NewMessage(role="tool", content=[part]))
    return messages


def _answer(call: DecidedCall) -> ResolvedAction:
    from ..agent.registry import ResolvedAction

    allowed = call.decision.effect == "allow"
    return ResolvedAction(
        action_id=call.action_id,
        status="submitted" if allowed else "cancelled",
        tool=call.tool,
        args=dict(call.args),
        reason=None if allowed else call.decision.denial(call.tool),
    )


def _as_stored(input: AgentInput, messages: list[NewMessage]) -> list[Message]:
    """The run's messages so far as the runner reads its history (they are stored when the run closes)."""
    last = input.history[-1].seq if input.history else 0
    stamp = {"session_id": input.session_id, "interaction_id": input.interaction_id, "run_id": input.run_id}
    return [
        Message(
            message_id=f"{input.run_id}-{i}",
            seq=last + i,
            role=m.role,
            type=m.type,
            content=m.content,
            created_at="",
            updated_at="",
            **stamp,
        )
        for i, m in enumerate(messages, start=1)
    ]


def _merged(
    first: AgentResult,
    told: list[NewMessage],
    decided: list[DecidedCall],
    following: AgentResult,
    asks: list[ActionRequest],
) -> AgentResult:
    """The run's result so far: the first part's messages, the denials, then what followed."""
    asked = {r.action_id for r in following.action_required}
    waiting = [*following.action_required, *(r for r in asks if r.action_id not in asked)]
    usage = first.usage
    if following.usage is not None:
        usage = following.usage if usage is None else usage + following.usage
    return following.model_copy(
        update={
            "messages": [*(first.messages or _replied(first)), *told, *following.messages],
            "tool_outcomes": {**first.tool_outcomes, **following.tool_outcomes},
            "decided": [*first.decided, *decided, *following.decided],
            "action_required": waiting,
            "interrupted": bool(waiting),
            "usage": usage,
        }
    )


def _replied(result: AgentResult) -> list[NewMessage]:
    return [NewMessage(role="ai", content=result.content)] if result.content else []

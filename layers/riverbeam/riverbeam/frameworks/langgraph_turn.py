"""The paused turn of a LangGraphRunner (CONTRACT 15): its calls as decided through the gate, the answers
that came for them (kept in the state until the last one arrives), and what each call then does: the
runner's gate's plan for it and the HumanInTheLoopMiddleware's decision for it."""

from __future__ import annotations

from typing import Any, NamedTuple

from beam_store import ToolResultPart

from ..agent.registry import ResolvedAction
from .calls import GatedCalls, Verdict

# what the model is told of a call a person cancelled without a reason
CANCELLED = "the person cancelled the action"


class Call(NamedTuple):
    call_id: str
    tool: str
    args: dict[str, Any]


class Plan(NamedTuple):
    """What the runner's gate does with a call: run it (with `args` where not the model's, `edited` where
    a person edited them; `notice`: the gate tells the model so, where the middleware does not) or tell
    the model `refusal` in its place."""

    args: dict[str, Any] | None = None
    refusal: str | None = None
    edited: bool = False
    notice: bool = False
    # for its `execute_tool` span: Riverbeam's id of the call, and the person's answer where one was asked
    action_id: str = ""
    answer: ResolvedAction | None = None
    # still waiting for a person: the runner's gate holds it with an interrupt of its own while the
    # turn's other calls run (their results kept as the checkpoint's pending writes)
    wait: bool = False
    # held at the runner's interrupt before: the gate passes it again (its answer given) so that the
    # interrupts after it in the call (the middleware's per-call one) keep their places
    unhold: bool = False


def pending(messages: list[Any]) -> list[Call]:
    """The calls of the last ai message that have no result yet."""
    from langchain_core.messages import AIMessage, ToolMessage

    last = next((i for i in range(len(messages) - 1, -1, -1) if isinstance(messages[i], AIMessage)), None)
    if last is None:
        return []
    done = {m.tool_call_id for m in messages[last:] if isinstance(m, ToolMessage)}
    return [
        Call(c["id"] or "", c["name"], dict(c["args"]))
        for c in messages[last].tool_calls
        if c["id"] not in done
    ]


class Turn:
    """The paused turn's calls as decided (`verdicts`, by the framework's call id) and the answers that
    came for them (`answers`, by action id), kept in the state until the last one arrives."""

    def __init__(self, state: dict[str, Any]) -> None:
        self.verdicts: dict[str, Verdict] = {}
        for call_id, (effect, action_id, refusal) in (state.get("verdicts") or {}).items():
            part = ToolResultPart.model_validate(refusal) if refusal else None
            self.verdicts[call_id] = Verdict(effect, action_id, part)
        self.answers: dict[str, ResolvedAction] = {
            k: ResolvedAction.model_validate(v) for k, v in (state.get("answers") or {}).items()
        }
        # calls whose batched interrupt the middleware got an approval for while they waited: the
        # runner's gate applies a person's edit of them, and tells the model
        self.held: set[str] = set(state.get("held") or ())
        self._asked: set[str] = set()  # the calls this run asks for (once each)
        # what each call of the turn does, settled once in a run (it stops before the tools and at the
        # middleware's interrupts: a refusal is told once, approved args are checked once)
        self._settled: dict[str, tuple[Plan, dict[str, Any]]] = {}

    def dump(self) -> dict[str, Any]:
        return {
            "verdicts": {
                k: [v.effect, v.action_id, v.refusal.model_dump(mode="json") if v.refusal else None]
                for k, v in self.verdicts.items()
            },
            "answers": {k: v.model_dump(mode="json") for k, v in self.answers.items()},
            "held": sorted(self.held & set(self.verdicts)),
        }

    def decide(self, calls: GatedCalls, pending: list[Call]) -> set[str]:
        """Each call of the turn not decided yet through the gate; those that still wait for a person."""
        waiting: set[str] = set()
        self.verdicts = {c.call_id: self.verdicts[c.call_id] for c in pending if c.call_id in self.verdicts}
        asked = {v.action_id for v in self.verdicts.values()}
        self.answers = {k: v for k, v in self.answers.items() if k in asked}
        for call in pending:
            verdict = self.verdicts.get(call.call_id)
            if verdict is None:
                verdict = self.verdicts[call.call_id] = calls.propose(*call)
                if verdict.refusal is not None:  # denied, or args unfit: the model is told
                    calls.told(verdict.refusal)
                if verdict.effect == "ask":
                    self._asked.add(call.call_id)
                    waiting.add(call.call_id)
            elif verdict.effect == "ask" and not self._answered(calls, call):
                if call.call_id not in self._asked:  # asked by an earlier run: asked for again, once
                    self._asked.add(call.call_id)
                    calls.wait(*call)
                waiting.add(call.call_id)
        return waiting

    def _answered(self, calls: GatedCalls, call: Call) -> bool:
        return (
            self.verdicts[call.call_id].action_id in self.answers or calls.expired(call.call_id) is not None
        )

    def settle(self, calls: GatedCalls, call: Call, edits: bool) -> tuple[Plan, dict[str, Any]]:
        """What the runner's gate does with a decided call, and the middleware's decision for it."""
        if call.call_id not in self._settled:
            self._settled[call.call_id] = self._settle(calls, call, edits)
        return self._settled[call.call_id]

    def _settle(self, calls: GatedCalls, call: Call, edits: bool) -> tuple[Plan, dict[str, Any]]:
        verdict = self.verdicts[call.call_id]
        if verdict.effect == "ask" and not self._answered(calls, call):
            return Plan(action_id=verdict.action_id, wait=True), {"type": "approve"}
        edits = edits and call.call_id not in self.held
        if verdict.effect != "ask":
            if verdict.refusal is not None:
                return refused(verdict.message)
            return Plan(action_id=verdict.action_id), {"type": "approve"}
        answer = self.answers.get(verdict.action_id)
        if answer is None:  # expired unanswered: a rejection that says so (its message is stored)
            return refused(calls.expired(call.call_id) or CANCELLED)
        if answer.status == "cancelled":  # the pipeline stores its refused tool message
            reason = answer.reason or CANCELLED  # told as the middleware tells a rejection
            return refused(reason, f"User rejected the tool call for `{call.tool}` with reason: {reason}")
        runs = calls.runs_with(answer, call.args)
        if isinstance(runs, Verdict):  # the args are not the approved ones: it does not run
            assert runs.refusal is not None
            calls.told(runs.refusal)
            return refused(runs.message)
        if not answer.edited:
            return Plan(args=runs, action_id=verdict.action_id, answer=answer), {"type": "approve"}
        edit = {"type": "edit", "edited_action": {"name": call.tool, "args": runs}}
        plan = Plan(runs, None, True, not edits, verdict.action_id, answer)
        return plan, edit


def refused(message: str, told: str | None = None) -> tuple[Plan, dict[str, Any]]:
    """A call that does not run: the middleware's rejection with `message`; the runner's gate tells the
    model `told` (else `message`) in its place."""
    return Plan(refusal=told or message), {"type": "reject", "message": message}

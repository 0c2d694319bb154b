"""One run's tool calls as another framework proposes them, each through Riverbeam's gate (CONTRACT 15):
what a framework runner asks before its framework runs a tool, and what it tells the pipeline after.

A framework names its calls with ids of its own; Riverbeam's records name each with a UUID (the Action's
id, the tool_call_id of its messages and frames), kept in the runner's state (`ids`) from the pause to the
resume. `propose` decides a call: args that do not fit the tool's schema are never decided nor asked
about (3.12); `allow` runs it, `ask` pauses the run (an ActionRequest), `deny` never runs it and the model is
told. `answer` is a person's answer to a call asked earlier; `runs_with` the args an approved call runs
with, or BEM-084 where the framework would run other args than the approved ones (or the edited ones)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import uuid
from collections.abc import Callable, Coroutine, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, TypeVar

from beam_store import ErrorInfo, TextPart, ToolCallPart, ToolOutcome, ToolResultPart, args_sha256

from ..models import ActionRequest, AgentResult, NewMessage, ToolCallFrame, ToolResultFrame
from ..policy.decision import DecidedCall, Decision
from ..policy.gate import Validate, recorded, verdict

if TYPE_CHECKING:
    from beam_store.records import ContentPart, TokenUsage

    from ..agent.registry import AgentInput, Emit, ResolvedAction

T = TypeVar("T")
Effect = Literal["allow", "ask", "deny", "unfit"]
MISMATCH_CODE = "BEM-084"
# the code of the tool message that tells the agent its call expired unanswered (pipeline/checks.py)
EXPIRED_CODE = "BEM-070"
# the code of the tool message that tells the agent a person refused its call
CANCELLED_CODE = "BEM-069"


def complete(work: Coroutine[Any, Any, T]) -> T:
    """Run a framework's coroutine to its end: here, or (inside a running loop) on a thread of its own."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(work)
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, work).result()


def schema_fingerprint(agent: str, schemas: Mapping[str, Any]) -> dict[str, Any]:
    """The agent's name and a hash of each tool's JSON schema: a paused run resumes only where they are the
    same (a changed tool schema refuses it, BEM-083)."""
    tools = {
        name: hashlib.sha256(json.dumps(s, sort_keys=True).encode()).hexdigest()
        for name, s in schemas.items()
    }
    return {"agent": agent, "tools": tools}


class Verdict(NamedTuple):
    """A proposed call's fate: `effect`, its Riverbeam id, and what the model is told where it does not run
    (`refusal`: the tool result part of a denied or unfit call)."""

    effect: Effect
    action_id: str
    refusal: ToolResultPart | None = None

    @property
    def message(self) -> str:
        error = self.refusal.error if self.refusal is not None else None
        return f"{error.code}: {error.message}" if error is not None else ""


class GatedCalls:
    """The calls of one run. `validate(tool, args)`: the (field, problem) pairs of args that do not fit the
    tool's schema, strictly; `marked(tool)`: whether the framework itself gates the tool (it asks under
    the baseline, as `confirm_required` does); `ids`: the framework's call ids to Riverbeam's, as the
    state kept them."""

    def __init__(
        self,
        input: AgentInput,
        emit: Emit,
        *,
        validate: Validate | None = None,
        marked: Callable[[str], bool] = lambda tool: False,
        ids: Mapping[str, str] | None = None,
    ) -> None:
        self.input, self.emit = input, emit
        self.validate, self.marked = validate, marked
        self.ids: dict[str, str] = dict(ids or {})
        self.asks: list[ActionRequest] = []
        self.decided: list[DecidedCall] = []
        self.denied_when_run: list[DecidedCall] = []
        self.outcomes: dict[str, ToolOutcome] = {}
        self.messages: list[NewMessage] = []
        self._answers = {a.action_id: a for a in input.actions}
        self._kept: set[str] = set()  # calls whose outcome the pipeline keeps on their Action

    def action_id(self, call_id: str) -> str:
        """Riverbeam's id of the framework's call (made on first sight, kept in `ids`)."""
        return self.ids.setdefault(call_id, str(uuid.uuid4()))

    def propose(self, call_id: str, tool: str, args: dict[str, Any]) -> Verdict:
        """Decide a call the framework is about to run; its frames are sent, an `ask` is kept for the
        result, a `deny` or unfit call's refusal is sent as its tool result (the runner tells the model)."""
        action_id, marked = self.action_id(call_id), self.marked(tool)
        decision = verdict(self.input.gate, tool, args, confirm_required=marked, validate=self.validate)
        if isinstance(decision, ErrorInfo):
            return self._refuse(
                Verdict("unfit", action_id, self._part(action_id, tool, "error", decision)), args
            )
        effect = decision.effect if decision else "ask" if marked else "allow"
        by = decision.by() if decision and effect != "ask" else None
        self.emit(
            ToolCallFrame(
                tool_call_id=action_id,
                name=tool,
                args=args,
                confirm_required=effect == "ask",
                decision=effect,
                decided_by=by,
            )
        )
        if effect == "ask":
            self.asks.append(ActionRequest(action_id=action_id, tool=tool, args=dict(args)))
            return Verdict("ask", action_id)
        if decision is not None and recorded(decision, confirm_required=marked):
            self.decided.append(DecidedCall(action_id, tool, dict(args), decision))
            self._kept.add(action_id)
        if effect == "deny":
            return self._denied(action_id, tool, args, decision or Decision("deny"))
        return Verdict("allow", action_id)

    def answer(self, call_id: str) -> ResolvedAction | None:
        """The answer to a call asked in an earlier run (a person's, or an expiry), if this run has it."""
        action_id = self.ids.get(call_id)
        return self._answers.get(action_id) if action_id is not None else None

    def expired(self, call_id: str) -> str | None:
        """Why a call asked earlier will never be answered (it expired: its tool message says so, in the
        run's history), else None (still waiting, or answered)."""
        action_id = self.ids.get(call_id)
        for message in reversed(self.input.history):
            for part in message.content:
                if isinstance(part, ToolResultPart) and part.tool_call_id == action_id and part.error:
                    return (
                        f"{part.error.code}: {part.error.message}"
                        if part.error.code == EXPIRED_CODE
                        else None
                    )
        return None

    def wait(self, call_id: str, tool: str, args: dict[str, Any]) -> None:
        """A call asked earlier and not answered yet (another of its turn was): asked for again, as it is
        stored (the pipeline keeps its Action and its time)."""
        self.asks.append(ActionRequest(action_id=self.action_id(call_id), tool=tool, args=dict(args)))

    def kept_answers(self, state: dict[str, Any]) -> list[dict[str, Any]]:
        """Each call a paused run asked (`state["pending"]`) answered into `state["answers"]` (this run's
        answer, or one kept from an earlier resume; an expiry is one); the calls still waiting, asked again
        and returned."""
        answers: dict[str, Any] = dict(state.get("answers") or {})
        state["answers"] = answers
        waiting = []
        for pending in state["pending"]:
            call_id = pending["call_id"]
            answer = self.answer(call_id)
            if answer is not None:
                answers[call_id] = {"answer": answer.model_dump(mode="json"), "refused": self.refusal(answer)}
            elif call_id not in answers:
                expired = self.expired(call_id)
                if expired is None:
                    waiting.append(pending)
                else:
                    answers[call_id] = {"refused": expired}
        for pending in waiting:
            self.wait(pending["call_id"], pending["tool"], pending["args"])
        return waiting

    def refusal(self, answer: ResolvedAction) -> str | None:
        """What the model is told of a rejected call: the refusal the pipeline stored (who, the reason)."""
        if answer.status == "submitted":
            return None
        for message in reversed(self.input.history):
            for part in message.content:
                if isinstance(part, ToolResultPart) and part.tool_call_id == answer.action_id and part.error:
                    return f"{part.error.code}: {part.error.message}"
        reason = f": {answer.reason}" if answer.reason else ""
        return f"{CANCELLED_CODE}: the person refused to run {answer.tool}{reason}"

    def runs_with(self, answer: ResolvedAction, framework_args: dict[str, Any]) -> dict[str, Any] | Verdict:
        """The args an approved call runs with: the approved ones (edited, where the person edited them);
        a refusal (BEM-084) where the framework's own args for it are not the ones that were asked about."""
        self._kept.add(answer.action_id)
        asked = answer.requested_args if answer.edited else answer.args
        if answer.args_sha256 is not None and args_sha256(answer.args) != answer.args_sha256:
            problem = "the approved args are not those stored"
        elif args_sha256(framework_args) != args_sha256(asked or {}):
            problem = "the framework would run other args than those asked about"
        else:
            return self._still_allowed(answer)
        error = ErrorInfo(code=MISMATCH_CODE, message=f"{answer.tool}: {problem}: it did not run")
        part = self._part(answer.action_id, answer.tool, "refused", error)
        self.emit(
            ToolResultFrame(tool_call_id=part.tool_call_id, name=part.name, status="refused", error=error)
        )
        self.outcomes[answer.action_id] = ToolOutcome(status="error", error=error)
        return Verdict("unfit", answer.action_id, part)

    def _still_allowed(self, answer: ResolvedAction) -> dict[str, Any] | Verdict:
        """The approved args, where the policy does not deny the call now, as it is about to run
        (CONTRACT 17); else its refusal, the Action then stored `denied` (the tool never runs)."""
        gate = self.input.gate
        decision = gate.decided_again(answer.tool, answer.args) if gate is not None else None
        if decision is None:
            return dict(answer.args)
        call = DecidedCall(answer.action_id, answer.tool, dict(answer.args), decision)
        self.denied_when_run.append(call)
        part = call.refusal(when_run=True)
        self.emit(
            ToolResultFrame(
                tool_call_id=part.tool_call_id, name=part.name, status="refused", error=part.error
            )
        )
        self.outcomes[answer.action_id] = ToolOutcome(status="error", error=part.error)
        return Verdict("deny", answer.action_id, part)

    def ran(
        self, action_id: str, tool: str, output: Any = None, error: ErrorInfo | None = None
    ) -> ToolResultPart:
        """A call the framework ran: its tool_result frame, and its outcome where its Action keeps one."""
        status: Literal["ok", "error"] = "error" if error is not None else "ok"
        part = ToolResultPart(tool_call_id=action_id, name=tool, status=status, output=output, error=error)
        self.emit(
            ToolResultFrame(tool_call_id=action_id, name=tool, status=status, output=output, error=error)
        )
        if action_id in self._kept:
            self.outcomes[action_id] = ToolOutcome(status=status, output=output, error=error)
        if self.input.gate is not None:  # it counts in the policy's `calls` from now on
            self.input.gate.ran(tool)
        return part

    # the session's messages, in the order the framework made them

    def said(self, text: str, calls: Sequence[tuple[str, str, dict[str, Any]]] = ()) -> None:
        """An ai message: its text and the calls it makes (framework call id, tool, args)."""
        content: list[ContentPart] = [TextPart(text=text)] if text else []
        content += [ToolCallPart(tool_call_id=self.action_id(c), name=t, args=dict(a)) for c, t, a in calls]
        if content:
            self.messages.append(NewMessage(role="ai", content=content))

    def told(self, part: ToolResultPart) -> None:
        """A tool message: what a call's tool returned, or why it did not run."""
        self.messages.append(NewMessage(role="tool", content=[part]))

    def result(self, text: str = "", *, state: Any = None, usage: TokenUsage | None = None) -> AgentResult:
        """The run's result: paused where calls ask (with `state` for its resume), else its final text."""
        return AgentResult(
            interrupted=bool(self.asks),
            action_required=list(self.asks),
            content=[TextPart(text=text)] if text else [],
            messages=list(self.messages),
            tool_outcomes=dict(self.outcomes),
            decided=list(self.decided),
            denied_when_run=list(self.denied_when_run),
            usage=usage,
            state=state,
        )

    # what does not run

    def _refuse(self, verdict: Verdict, args: dict[str, Any]) -> Verdict:
        part = verdict.refusal
        assert part is not None and part.error is not None
        self.emit(ToolCallFrame(tool_call_id=part.tool_call_id, name=part.name, args=args))
        self.emit(
            ToolResultFrame(tool_call_id=part.tool_call_id, name=part.name, status="error", error=part.error)
        )
        return verdict

    def _denied(self, action_id: str, tool: str, args: dict[str, Any], decision: Decision) -> Verdict:
        from ..telemetry import spans

        spans.call_denied(tool=tool, call_id=action_id, decided_by=spans.decided_by(decision.by()))
        part = DecidedCall(action_id, tool, dict(args), decision).refusal()
        self.emit(ToolResultFrame(tool_call_id=action_id, name=tool, status="refused", error=part.error))
        return Verdict("deny", action_id, part)

    @staticmethod
    def _part(
        action_id: str, tool: str, status: Literal["error", "refused"], error: ErrorInfo
    ) -> ToolResultPart:
        return ToolResultPart(tool_call_id=action_id, name=tool, status=status, error=error)

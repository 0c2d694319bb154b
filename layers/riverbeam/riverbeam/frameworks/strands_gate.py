"""Riverbeam's hooks on a `strands.Agent` (CONTRACT 15): every tool call the agent is about to run passes
the gate in a `BeforeToolCallEvent` callback registered after the user's own. A call the user's hook
interrupts is "marked" (it asks under the baseline); `ask` pauses the call (the user's interrupt, or
Riverbeam's own where none), `deny` and args that do not fit the schema cancel it with the reason, and
what the gate decided for a marked call answers the user's interrupt (`auto`) within the run. On resume, a
person's answer approves (the edited input set on the call: the model sees it too, the call being its
message's) or cancels with the reason. `AfterToolCallEvent` and `MessageAddedEvent` record the tool
results and the model's messages, in order, as the session's."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from beam_store import ErrorInfo, TokenUsage

from ..agent.registry import ResolvedAction
from .calls import GatedCalls, Verdict

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, Callable

    from beam_store import ToolResultPart
    from strands.hooks import AfterToolCallEvent, BeforeToolCallEvent, MessageAddedEvent
    from strands.interrupt import Interrupt
    from strands.middleware import ExecuteToolContext, TypedEvent

    Events = AsyncGenerator[TypedEvent, None]

# the name of Riverbeam's own interrupt, for a call the user's hooks do not interrupt
OWN = "riverbeam"
FAILED_CODE = "BEM-331"
UNKNOWN_CODE = "BEM-333"
APPROVALS = (True, "y", "yes")  # the answers Strands' own HITL reads as an approval


class RiverbeamHooks:
    """The callbacks, and what one run of the runner knows: `calls` (the gate, the records), `answers`
    (call id -> a person's answer or an expiry, on resume), `decided` (call id -> [effect, message] of a
    call decided without a person), `asked` (call ids waiting for a person), `interrupts` (call id -> the
    ids of its interrupts), `auto` (interrupt id -> the response Riverbeam gives it itself)."""

    def __init__(self) -> None:
        self.begin(None)

    def begin(self, calls: GatedCalls | None, kept: dict[str, Any] | None = None) -> None:
        """A new run: its calls, and what a paused run kept (`decided`, `interrupts`); None: no run."""
        kept = kept or {}
        self.calls = calls
        self.answers: dict[str, Any] = {}
        self.decided: dict[str, list[str]] = {k: list(v) for k, v in (kept.get("decided") or {}).items()}
        self.asked: set[str] = set()
        self.interrupts: dict[str, list[str]] = {
            k: list(v) for k, v in (kept.get("interrupts") or {}).items()
        }
        self.auto: dict[str, Any] = {}
        self.given: set[str] = set()  # interrupts answered in this run
        self.parts: dict[str, ToolResultPart] = {}  # call id -> the tool message Riverbeam made for it
        self.edited: dict[str, dict[str, Any]] = {}  # call id -> the args a person edited it to
        self.silent: set[str] = set()  # rejected or expired: the pipeline stores their tool message
        self.usage: list[TokenUsage] = []
        self.marking = False

    def before(self, event: BeforeToolCallEvent) -> None:
        calls = self.calls
        if calls is None:  # the agent run outside its runner: Riverbeam has nothing to say
            return
        use = event.tool_use
        call_id, tool = str(use["toolUseId"]), use["name"]
        args = use.get("input") if isinstance(use.get("input"), dict) else {}
        marks = _marks(event)
        if marks:
            self.interrupts[call_id] = sorted({*self.interrupts.get(call_id, []), *(m.id for m in marks)})
        if call_id in self.answers:
            self._answered(event, calls, call_id, dict(args or {}))
        elif call_id in self.decided:
            effect, message = self.decided[call_id]
            if effect != "allow":
                event.cancel_tool = message
        elif call_id in self.asked:
            if not any(m.name != OWN for m in marks):
                self._interrupt(event, call_id, tool, args)
        else:
            self._propose(event, calls, call_id, tool, dict(args or {}), marks)

    def _propose(
        self,
        event: BeforeToolCallEvent,
        calls: GatedCalls,
        call_id: str,
        tool: str,
        args: dict[str, Any],
        marks: list[Interrupt],
    ) -> None:
        pending = [m for m in marks if m.response is None]
        self.marking = bool(pending)
        verdict = calls.propose(call_id, tool, args)
        self.marking = False
        if verdict.effect == "ask":
            self.asked.add(call_id)
            if not pending:
                self._interrupt(event, call_id, tool, args)
            return
        self.decided[call_id] = [verdict.effect, verdict.message]
        for mark in pending:  # the user's interrupt answered as the gate decided
            self.auto[mark.id] = True if verdict.effect == "allow" else verdict.message
        if verdict.refusal is not None:
            self.parts[call_id] = verdict.refusal
            event.cancel_tool = verdict.message

    def _interrupt(self, event: BeforeToolCallEvent, call_id: str, tool: str, args: Any) -> None:
        """Riverbeam's own interrupt, for a call that asks and no hook of the user's interrupted."""
        own = event._interrupt_id(OWN)
        self.interrupts[call_id] = sorted({*self.interrupts.get(call_id, []), own})
        event.interrupt(OWN, reason={"tool": tool, "args": args})

    def unknown(self, interrupts: list[Interrupt]) -> list[str]:
        """The names of interrupts no asked call raised (a tool's own, from its ToolContext)."""
        known = {i for call_id in self.asked for i in self.interrupts.get(call_id, [])}
        return sorted({i.name for i in interrupts if i.id not in known})

    def _answered(
        self, event: BeforeToolCallEvent, calls: GatedCalls, call_id: str, args: dict[str, Any]
    ) -> None:
        kept = self.answers[call_id]
        if kept.get("refused") is not None:
            self.silent.add(call_id)
            event.cancel_tool = kept["refused"]
            return
        answer = ResolvedAction.model_validate(kept["answer"])
        runs = calls.runs_with(answer, args)
        if isinstance(runs, Verdict):  # not the args asked about (BEM-084): it does not run
            assert runs.refusal is not None
            self.parts[call_id] = runs.refusal
            event.cancel_tool = runs.message
        else:
            event.tool_use["input"] = runs
            if answer.edited:
                self.edited[call_id] = runs
            _rewrite(event.agent.messages, call_id, runs)

    def responses(self, interrupts: list[Interrupt]) -> list[dict[str, Any]]:
        """The interruptResponse blocks Riverbeam gives the paused agent itself: a person's answers (on
        resume) and what the gate decided for a marked call."""
        given = []
        for interrupt in interrupts:
            response = self.auto.get(interrupt.id)
            for call_id, ids in self.interrupts.items():
                if interrupt.id in ids and call_id in self.answers:
                    refused = self.answers[call_id].get("refused")
                    response = True if refused is None else refused
            if response is not None and interrupt.id not in self.given:  # raised again: not answered twice
                self.given.add(interrupt.id)
                given.append({"interruptResponse": {"interruptId": interrupt.id, "response": response}})
        return given

    async def wrap(
        self,
        context: ExecuteToolContext,
        next_fn: Callable[[ExecuteToolContext], AsyncGenerator[TypedEvent, None]],
    ) -> AsyncGenerator[TypedEvent, None]:
        """Strands' tool execution (ExecuteToolStage middleware) in Riverbeam's `execute_tool` span,
        as the built-in runner runs a tool: how it came to run, who answered, the args' hash."""
        from strands.middleware import ToolResultEvent

        from ..telemetry import spans  # imported by the first call that runs, as the built-in runner does

        use, calls = context.tool_use, self.calls
        if calls is None:
            async for event in next_fn(context):
                yield event
            return
        call_id = str(use["toolUseId"])
        kept = self.answers.get(call_id, {}).get("answer")
        answer = ResolvedAction.model_validate(kept) if kept else None
        with spans.tool_span(
            tool=use["name"],
            call_id=calls.action_id(call_id),
            args=dict(use.get("input") or {}),
            decision="ask" if answer is not None else "allow",
            action_id=answer.action_id if answer is not None else None,
            args_sha256=answer.args_sha256 if answer is not None else None,
            decided_by=answer.decided_by if answer is not None else None,
        ) as span:
            async for event in next_fn(context):
                if isinstance(event, ToolResultEvent):
                    output, error = _outcome(event.tool_result, FAILED_CODE)
                    status = "error" if error is not None else "ok"
                    spans.tool_outcome(span, status=status, output=output, code=FAILED_CODE)
                yield event

    def after(self, event: AfterToolCallEvent) -> None:
        calls = self.calls
        if calls is None:
            return
        call_id, tool = str(event.tool_use["toolUseId"]), event.tool_use["name"]
        if call_id in self.silent:
            return
        part = self.parts.get(call_id)
        if part is None:
            unknown = event.selected_tool is None and event.cancel_message is None
            output, error = _outcome(event.result, UNKNOWN_CODE if unknown else FAILED_CODE)
            part = calls.ran(calls.action_id(call_id), tool, output, error)
            if call_id in self.edited:  # the session's tool message says what it ran with
                part.edited_args = dict(self.edited[call_id])
        calls.told(part)

    def added(self, event: MessageAddedEvent) -> None:
        message = event.message
        if self.calls is None or message.get("role") != "assistant":
            return
        blocks = message.get("content", [])
        text = "".join(b["text"] for b in blocks if "text" in b)
        made = [
            (str(b["toolUse"]["toolUseId"]), b["toolUse"]["name"], dict(b["toolUse"].get("input") or {}))
            for b in blocks
            if "toolUse" in b
        ]
        self.calls.said(text, made)
        used = message.get("metadata", {}).get("usage")
        if used:
            self.usage.append(
                TokenUsage(input_tokens=used.get("inputTokens", 0), output_tokens=used.get("outputTokens", 0))
            )


def _marks(event: BeforeToolCallEvent) -> list[Interrupt]:
    """The interrupts of this call (the user's hooks', Riverbeam's own), as the agent keeps them."""
    state = event.agent._interrupt_state.interrupts
    return [i for i in state.values() if event._interrupt_id(i.name) == i.id]


def _rewrite(messages: list[Any], call_id: str, args: dict[str, Any]) -> None:
    """The call's args in the agent's messages (a loaded pending call is a copy): the model sees them."""
    for message in messages:
        for block in message.get("content", []):
            if "toolUse" in block and block["toolUse"].get("toolUseId") == call_id:
                block["toolUse"]["input"] = dict(args)


def _outcome(result: Any, code: str) -> tuple[Any, ErrorInfo | None]:
    """A Strands tool result as Riverbeam's output, or its error (`code`: the tool failed, or the agent
    has no such tool)."""
    blocks = result.get("content", []) if isinstance(result, dict) else []
    parts = [b["json"] if "json" in b else b.get("text", "") for b in blocks]
    if all(isinstance(p, str) for p in parts):
        output: Any = "".join(parts)
    else:
        output = parts[0] if len(parts) == 1 else parts
    if result.get("status") == "error":
        said = output if isinstance(output, str) else json.dumps(output)
        return None, ErrorInfo(code=code, message=said[:2000] or "the tool failed")
    return output, None

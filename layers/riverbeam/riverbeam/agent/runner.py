"""ToolAgentRunner: a model in a loop with tools; tools marked confirm_required wait for a person."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any, NamedTuple

from beam_store.records import (
    ErrorInfo,
    TextPart,
    TokenUsage,
    ToolCallPart,
    ToolOutcome,
    ToolResultPart,
)

from ..errors import BeamError, ToolError
from ..models import (
    ActionRequest,
    AgentResult,
    ErrorFrame,
    NewMessage,
    TextDeltaFrame,
    ToolCallFrame,
    ToolResultFrame,
)
from ..policy.decision import DecidedCall, Decision
from ..policy.gate import CallGate, recorded, verdict
from ..tools import Tool
from .bounded_calls import parsed_calls, refused
from .registry import DEFAULT_HISTORY_WINDOW, AgentInput, Emit, ResolvedAction, RunnerFailure

if TYPE_CHECKING:
    from .llm import ChatModel, ModelTurn

DEFAULT_MAX_TURNS = 16
# the provider a model without a `provider_name` of its own is told as, on its `chat` spans
OFFLINE_PROVIDER = "riverbeam.offline"


class _Kept(NamedTuple):
    """What a run keeps: its messages, tool outcomes by call id, the calls decided unasked, the approved
    calls denied as they were to run."""

    produced: list[NewMessage]
    outcomes: dict[str, ToolOutcome]
    decided: list[DecidedCall]
    denied_when_run: list[DecidedCall]

    def result(self, **fields: Any) -> AgentResult:
        """The run's result (or what it did before it failed), with `fields`."""
        return AgentResult(
            messages=self.produced,
            tool_outcomes=self.outcomes,
            decided=self.decided,
            denied_when_run=self.denied_when_run,
            **fields,
        )


def _outcome(part: ToolResultPart) -> ToolOutcome:
    return ToolOutcome(status="ok" if part.status == "ok" else "error", output=part.output, error=part.error)


def _spans() -> ModuleType:
    """riverbeam.telemetry.spans, imported by the first run: a handler that only checks and queues (and so
    builds the runner) never imports OpenTelemetry."""
    from ..telemetry import spans

    return spans


class ToolAgentRunner:
    # it decides each call itself, by its input's gate, before the call runs (pipeline/decisions.py)
    decides_calls = True

    def __init__(
        self,
        model: ChatModel | None = None,
        tools: Sequence[Tool] = (),
        *,
        max_turns: int = DEFAULT_MAX_TURNS,
        make_model: Callable[[], ChatModel] | None = None,
    ) -> None:
        """`model`, or `make_model` to make it on first use (agents.yaml's agents: an API handler that
        only checks and queues never imports nor makes a model)."""
        if (model is None) == (make_model is None):
            raise TypeError("ToolAgentRunner takes a model or make_model, not both nor neither")
        self._model = model
        self._make_model = make_model
        self.tools = {t.name: t for t in tools}
        if len(self.tools) != len(tools):  # the last of a name would win, silently
            names = [t.name for t in tools]
            twice = sorted({n for n in names if names.count(n) > 1})
            raise ValueError(f"ToolAgentRunner: tools must have distinct names; given twice: {twice}")
        self.max_turns = max_turns

    @property
    def model(self) -> ChatModel:
        if self._model is None and self._make_model is not None:
            self._model = self._make_model()
        assert self._model is not None  # one of the two is given (__init__)
        return self._model

    @property
    def history_window(self) -> int | None:
        """The session's last messages this runner is given: its model's `history_window` where it has
        one (None: the whole conversation), else the default (ScriptedModel too: it finds its place in it)."""
        window: int | None = getattr(self.model, "history_window", DEFAULT_HISTORY_WINDOW)
        return window

    def validate_args(self, tool: str, args: dict[str, Any]) -> list[tuple[str, str]]:
        """What in `args` does not fit the tool's schema (a tool it does not have fails when it runs)."""
        found = self.tools.get(tool)
        return found.problems(args) if found is not None else []

    def editable(self, tool: str) -> bool:
        found = self.tools.get(tool)
        return found is None or found.editable

    def grantable(self, tool: str) -> bool:
        """Whether an approval may grant the tool for the rest of the session (CONTRACT 10)."""
        found = self.tools.get(tool)
        return found is None or found.grantable

    def run(self, input: AgentInput, emit: Emit) -> AgentResult:
        kept = _Kept([], {}, [], [])
        try:
            return self._run(input, emit, kept)
        except Exception as error:  # tools that ran (or were denied) before the failure are still recorded
            raise RunnerFailure(error, kept.result()) from error

    def _run(self, input: AgentInput, emit: Emit, kept: _Kept) -> AgentResult:
        conversation = [NewMessage(role=m.role, type=m.type, content=m.content) for m in input.history]

        def add(message: NewMessage) -> None:
            kept.produced.append(message)
            conversation.append(message)

        for action in input.actions:
            if action.status == "submitted":
                part = self._answered(action, input.gate, emit, kept.denied_when_run)
                kept.outcomes[action.action_id] = _outcome(part)
                add(NewMessage(role="tool", content=[part]))

        waiting = self._unanswered(conversation) if input.actions else []
        if waiting:  # a resume that answered only some of the pending actions
            return kept.result(interrupted=True, action_required=waiting)

        usage: TokenUsage | None = None
        for _ in range(self.max_turns):
            turn = self._next_turn(conversation, emit)
            if turn.usage is not None:
                usage = turn.usage if usage is None else usage + turn.usage
            text = [TextPart(text=turn.text)] if turn.text else []
            parsed = parsed_calls(turn.tool_calls)
            add(NewMessage(role="ai", content=[*text, *(c.part for c in parsed)]))
            if not parsed:
                return kept.result(content=text, usage=usage)
            for call in parsed:  # args out of bounds: the model's malformed call, never decided
                if call.refusal is not None:
                    add(NewMessage(role="tool", content=[refused(call, emit)]))
            calls = [c.part for c in parsed if c.refusal is None]
            asks = self._call_tools(calls, input.gate, emit, add, kept)
            if asks:
                return kept.result(interrupted=True, action_required=asks, content=text, usage=usage)
        raise BeamError("BEM-041", f"the agent took more than {self.max_turns} model turns")

    def _call_tools(
        self,
        calls: Sequence[ToolCallPart],
        gate: CallGate | None,
        emit: Emit,
        add: Callable[[NewMessage], None],
        kept: _Kept,
    ) -> list[ActionRequest]:
        """Decide each call (the gate, else the tool's confirm_required): run those allowed (their results
        added), tell the agent of those denied (they never run), and ask for the others."""
        asks: list[ActionRequest] = []
        for call in calls:
            tool = self.tools.get(call.name)
            confirm = tool is not None and tool.confirm_required
            decided = self._decide(call, tool, gate)
            if isinstance(decided, ErrorInfo):  # never asked about, never run (CONTRACT 3.12)
                add(NewMessage(role="tool", content=[self._unfit(call, decided, emit)]))
                continue
            decision = decided
            effect = decision.effect if decision else "ask" if confirm else "allow"
            emit(
                ToolCallFrame(
                    tool_call_id=call.tool_call_id,
                    name=call.name,
                    args=call.args,
                    confirm_required=effect == "ask",
                    decision=effect,
                    decided_by=decision.by() if decision and effect != "ask" else None,
                )
            )
            if effect == "ask":
                asks.append(self._ask(call))
                continue
            if decision is not None and recorded(decision, confirm_required=confirm):
                kept.decided.append(DecidedCall(call.tool_call_id, call.name, dict(call.args), decision))
            by = _spans().decided_by(decision.by()) if decision else None
            if effect == "deny":
                _spans().call_denied(tool=call.name, call_id=call.tool_call_id, decided_by=by)
                part = self._refuse(kept.decided[-1], emit)
            else:
                part = self._execute(call.tool_call_id, call.name, call.args, emit, decided_by=by)
                if gate is not None:
                    gate.ran(call.name)
            if confirm and effect == "allow":  # kept on its Action
                kept.outcomes[call.tool_call_id] = _outcome(part)
            add(NewMessage(role="tool", content=[part]))
        return asks

    @staticmethod
    def _decide(call: ToolCallPart, tool: Tool | None, gate: CallGate | None) -> Decision | ErrorInfo | None:
        """The call's decision (None: no gate, the tool's confirm_required decides), or why it cannot run
        and so is neither decided nor asked about: no such tool, args that do not fit its schema (strictly),
        args holding a number the policy cannot read."""
        if tool is None:
            return ErrorInfo(code="BEM-333", message=f"the tool {call.name!r} is not available to this agent")
        try:
            return verdict(
                gate,
                call.name,
                dict(call.args),
                confirm_required=tool.confirm_required,
                validate=lambda _, args: tool.problems(args),
            )
        except BeamError as error:  # an MCP server out of reach for its schema: the call's outcome
            return ErrorInfo(code=error.code, message=error.message)

    def _answered(
        self, action: ResolvedAction, gate: CallGate | None, emit: Emit, denied: list[DecidedCall]
    ) -> ToolResultPart:
        """An approved call run, decided again first: a forbid that holds now denies it (it never runs)."""
        decision = gate.decided_again(action.tool, action.args) if gate is not None else None
        if decision is not None:
            call = DecidedCall(action.action_id, action.tool, dict(action.args), decision)
            denied.append(call)
            return self._refuse(call, emit, when_run=True)
        part = self._execute(action.action_id, action.tool, action.args, emit, answered=action)
        if gate is not None:
            gate.ran(action.tool)
        if action.edited:  # the model is told it ran with the args the person chose
            part.edited_args = dict(action.args)
        return part

    @staticmethod
    def _unfit(call: ToolCallPart, error: ErrorInfo, emit: Emit) -> ToolResultPart:
        """The result of a call that cannot run: an error naming the fields, its frames; nothing ran."""
        emit(ToolCallFrame(tool_call_id=call.tool_call_id, name=call.name, args=call.args))
        emit(ErrorFrame(code=error.code, message=error.message))
        emit(ToolResultFrame(tool_call_id=call.tool_call_id, name=call.name, status="error", error=error))
        return ToolResultPart(tool_call_id=call.tool_call_id, name=call.name, status="error", error=error)

    @staticmethod
    def _refuse(call: DecidedCall, emit: Emit, *, when_run: bool = False) -> ToolResultPart:
        """A denied call's result: refused, the policy named; the tool is never called."""
        part = call.refusal(when_run=when_run)
        emit(ToolResultFrame(tool_call_id=call.action_id, name=call.tool, status="refused", error=part.error))
        return part

    def _next_turn(self, conversation: list[NewMessage], emit: Emit) -> ModelTurn:
        """The model's next turn, in its `chat` span (ended when the call returns, or raises)."""
        model = self.model
        name = getattr(model, "model_id", None) or type(model).__name__
        provider = getattr(model, "provider_name", OFFLINE_PROVIDER)
        with _spans().chat_span(model=name, provider=provider) as span:
            turn = model.next_turn(
                conversation, list(self.tools.values()), lambda text: emit(TextDeltaFrame(text=text))
            )
            _spans().usage(span, turn.usage)
        return turn

    def _execute(
        self,
        call_id: str,
        name: str,
        args: dict[str, object],
        emit: Emit,
        *,
        answered: ResolvedAction | None = None,
        decided_by: str | None = None,
    ) -> ToolResultPart:
        """The tool's call in its `execute_tool` span: `answered` by a person (`ask`), or run unasked
        (`allow`; `decided_by` the policy or grant that allowed it, where one did)."""
        telemetry = _spans()
        with telemetry.tool_span(
            tool=name,
            call_id=call_id,
            args=args,
            decision="ask" if answered is not None else "allow",
            action_id=answered.action_id if answered is not None else None,
            args_sha256=answered.args_sha256 if answered is not None else None,
            decided_by=answered.decided_by if answered is not None else decided_by,
        ) as span:
            part = self._call(call_id, name, args, emit)
            telemetry.tool_outcome(
                span, status=part.status, output=part.output, code=part.error.code if part.error else None
            )
        return part

    def _call(self, call_id: str, name: str, args: dict[str, object], emit: Emit) -> ToolResultPart:
        tool = self.tools.get(name)
        try:
            if tool is None:
                raise ToolError("BEM-333", f"the tool {name!r} is not available to this agent")
            part = ToolResultPart(
                tool_call_id=call_id, name=name, status="ok", output=tool.invoke(dict(args))
            )
        except ToolError as error:
            part = ToolResultPart(
                tool_call_id=call_id,
                name=name,
                status="error",
                error=ErrorInfo(code=error.code, message=error.message),
            )
            emit(ErrorFrame(code=error.code, message=error.message))
        emit(
            ToolResultFrame(
                tool_call_id=call_id, name=name, status=part.status, output=part.output, error=part.error
            )
        )
        return part

    def _ask(self, call: ToolCallPart) -> ActionRequest:
        tool = self.tools.get(call.name)
        expires_after = tool.expires_after if tool is not None else None
        return ActionRequest(
            action_id=call.tool_call_id, tool=call.name, args=call.args, expires_after=expires_after
        )

    def _unanswered(self, conversation: Sequence[NewMessage]) -> list[ActionRequest]:
        """Tool calls of the last ai turn that have no result yet."""
        last_ai = max((i for i, m in enumerate(conversation) if m.role == "ai"), default=None)
        if last_ai is None:
            return []
        answered = {
            p.tool_call_id
            for m in conversation[last_ai + 1 :]
            for p in m.content
            if isinstance(p, ToolResultPart)
        }
        calls = [p for p in conversation[last_ai].content if isinstance(p, ToolCallPart)]
        return [self._ask(c) for c in calls if c.tool_call_id not in answered]

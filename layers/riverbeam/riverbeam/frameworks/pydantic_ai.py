"""PydanticAIRunner: a `pydantic_ai.Agent` inside Riverbeam (CONTRACT 15). Every tool call passes the gate
(pydantic_ai_gate.py); a run that asks ends on the framework's own `DeferredToolRequests` and keeps, as its
state, the framework's message history (`ModelMessagesTypeAdapter`, JSON) with the calls asked. The resume
answers them with the framework's `DeferredToolResults` (`ToolApproved(override_args=...)` for an edit, the
history's call rewritten so the model sees the edited args; `ToolDenied(why)` for a rejection or an
expiry) once every call of the turn is answered: a call approved before that runs in the run of its
answer (the framework resumed with it and stopped before its model), its result and the other answers kept
in the state for the last one."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterable, Sequence
from typing import TYPE_CHECKING, Any

from beam_store import TextPart, TokenUsage, ToolCallPart, ToolResultPart
from pydantic import ValidationError
from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults, RunContext, ToolApproved, ToolDenied
from pydantic_ai import messages as pai
from pydantic_ai.toolsets import FunctionToolset

from ..agent.registry import AgentInput, Emit, ResolvedAction, RunnerFailure
from ..models import AgentResult, TextDeltaFrame
from .calls import GatedCalls, complete, schema_fingerprint
from .pydantic_ai_gate import RiverbeamGate, StopBeforeModel, jsonable

if TYPE_CHECKING:
    from beam_store.records import Message
    from pydantic_ai.run import AgentRunResult
    from pydantic_ai.tools import Tool

# what a waiting call is answered with in a run stopped before its model (never seen by the model)
WAITING = "not answered yet"


class PydanticAIRunner:
    """Runs `agent` (a `pydantic_ai.Agent`) with its tools behind Riverbeam's gate."""

    decides_calls = True
    keeps_state = True

    def __init__(self, agent: Agent[Any, Any]) -> None:
        if not isinstance(agent, Agent):
            raise TypeError(f"PydanticAIRunner takes a pydantic_ai.Agent, not {type(agent).__name__}")
        self.agent = agent

    def function_tools(self) -> dict[str, Tool[Any]]:
        """The agent's function tools, by name."""
        found: dict[str, Tool[Any]] = {}
        for toolset in self.agent.toolsets:
            if isinstance(toolset, FunctionToolset):
                found.update(toolset.tools)
        return found

    def validate_args(self, tool: str, args: dict[str, Any]) -> list[tuple[str, str]]:
        """What in `args` does not fit the tool's schema, strictly (the tool's own validator; no coercion:
        "2" is no int)."""
        found = self.function_tools().get(tool)
        if found is None:
            return []
        try:
            found.function_schema.validator.validate_json(json.dumps(args), strict=True)
        except ValidationError as error:
            return [(".".join(str(x) for x in e["loc"]) or "args", e["msg"]) for e in error.errors()]
        return []

    def editable(self, tool: str) -> bool:
        return True

    def grantable(self, tool: str) -> bool:
        return True

    def marked(self, tool: str) -> bool:
        """Whether the framework itself gates the tool (`requires_approval=True`)."""
        found = self.function_tools().get(tool)
        return found is not None and found.requires_approval

    def _output_type(self) -> list[Any]:
        """The agent's own output types, and the framework's deferred calls (how a run pauses)."""
        own = self.agent.output_type
        kinds = list(own) if isinstance(own, Sequence) and not isinstance(own, str) else [own]
        return kinds if DeferredToolRequests in kinds else [*kinds, DeferredToolRequests]

    def fingerprint(self) -> dict[str, Any]:
        schemas = {name: t.tool_def.parameters_json_schema for name, t in self.function_tools().items()}
        return schema_fingerprint(self.agent.name or "pydantic_ai", schemas)

    def run(self, input: AgentInput, emit: Emit) -> AgentResult:
        state = input.state if isinstance(input.state, dict) else None
        ids = state.get("ids") if state else None
        asking: set[str] = set()  # a tool that asks as it runs is decided as marked (pydantic_ai_gate)
        marked = lambda tool: self.marked(tool) or tool in asking  # noqa: E731
        calls = GatedCalls(input, emit, validate=self.validate_args, marked=marked, ids=ids)
        try:
            return complete(self._run(input, calls, state, asking))
        except Exception as error:  # what ran (or was denied) before the failure is still recorded
            partial = AgentResult(
                messages=list(calls.messages), tool_outcomes=dict(calls.outcomes), decided=list(calls.decided)
            )
            raise RunnerFailure(error, partial) from error

    async def _run(
        self, input: AgentInput, calls: GatedCalls, state: dict[str, Any] | None, asking: set[str]
    ) -> AgentResult:
        gate = RiverbeamGate(calls, asking=asking)
        results: DeferredToolResults | None = None
        if state is not None and state.get("pending"):
            waiting = [p["call_id"] for p in calls.kept_answers(state)]
            history = pai.ModelMessagesTypeAdapter.validate_python(state["messages"])
            results = _deferred_results(state, history, gate, waiting)
            if waiting:  # some call of the turn is not answered yet: asked again, the answers kept
                return await self._early(state, history, results, gate)
            # a person's message sent with the answers (or the one an expiry answered): after the results
            prompt = "".join(p.text for p in input.content if isinstance(p, TextPart)) or None
        else:
            history, prompt = model_history(input.history, input.content)
        streams = getattr(self.agent.model, "stream_function", True) is not None  # a FunctionModel may not
        result: AgentRunResult[Any] = await self.agent.run(
            prompt,
            message_history=history,
            deferred_tool_results=results,
            output_type=self._output_type(),
            capabilities=[gate],
            event_stream_handler=_deltas(calls.emit) if streams else None,
        )
        if isinstance(result.output, DeferredToolRequests) and result.output.calls:
            names = sorted({c.tool_name for c in result.output.calls})
            raise ValueError(f"external tool calls (CallDeferred) are not supported: {names}")
        _record(result.new_messages(), calls, gate)
        usage = _usage(result)
        if isinstance(result.output, DeferredToolRequests):
            return calls.result(state=_paused(result, calls), usage=usage)
        return calls.result(_text(result.output), usage=usage)

    async def _early(
        self,
        state: dict[str, Any],
        history: list[pai.ModelMessage],
        results: DeferredToolResults,
        gate: RiverbeamGate,
    ) -> AgentResult:
        """The calls approved while others of their turn wait run now, in the run of their answer (their
        outcomes on their Actions): the framework resumes with them (the waiting ones answered for this
        run only) and is stopped before its model; their results are kept for the turn's last answer."""
        if gate.approved:
            gate.stop = True
            with contextlib.suppress(StopBeforeModel):
                await self.agent.run(
                    message_history=history,
                    deferred_tool_results=results,
                    output_type=self._output_type(),
                    capabilities=[gate],
                )
            for call_id in gate.approved:
                part = gate.parts.get(call_id)
                if part is not None:
                    gate.calls.told(part)
                    state["answers"][call_id] = {"ran": part.model_dump(mode="json")}
            state["messages"] = pai.ModelMessagesTypeAdapter.dump_python(history, mode="json")
        return gate.calls.result(state=state)


def _deltas(emit: Emit) -> Any:
    async def handler(ctx: RunContext[Any], events: AsyncIterable[pai.AgentStreamEvent]) -> None:
        async for event in events:
            if isinstance(event, pai.PartStartEvent) and isinstance(event.part, pai.TextPart):
                text = event.part.content
            elif isinstance(event, pai.PartDeltaEvent) and isinstance(event.delta, pai.TextPartDelta):
                text = event.delta.content_delta
            else:
                continue
            if text:
                emit(TextDeltaFrame(text=text))

    return handler


def _text(output: Any) -> str:
    return output if isinstance(output, str) else json.dumps(jsonable(output))


def _usage(result: AgentRunResult[Any]) -> TokenUsage | None:
    used = result.usage
    if not (used.input_tokens or used.output_tokens):
        return None
    return TokenUsage(
        input_tokens=used.input_tokens,
        output_tokens=used.output_tokens,
        cache_read_tokens=used.cache_read_tokens,
        cache_write_tokens=used.cache_write_tokens,
    )


def _paused(result: AgentRunResult[Any], calls: GatedCalls) -> dict[str, Any]:
    """The state a paused run keeps: the framework's history, the calls asked (their Riverbeam ids)."""
    asked = result.output.approvals
    pending = [{"call_id": c.tool_call_id, "tool": c.tool_name, "args": c.args_as_dict()} for c in asked]
    return {
        "messages": pai.ModelMessagesTypeAdapter.dump_python(result.all_messages(), mode="json"),
        "ids": {p["call_id"]: calls.action_id(p["call_id"]) for p in pending},
        "pending": pending,
        "answers": {},
    }


def _deferred_results(
    state: dict[str, Any], history: list[pai.ModelMessage], gate: RiverbeamGate, waiting: list[str]
) -> DeferredToolResults:
    """The framework's answers to its deferred calls (a waiting call's, for a run stopped before its model
    only); an edited call is rewritten in the history, so the model sees the args its tool ran with."""
    approvals: dict[str, bool | ToolApproved | ToolDenied] = dict.fromkeys(waiting, ToolDenied(WAITING))
    for call_id, kept in state["answers"].items():
        if kept.get("ran") is not None:  # run in an earlier resume: its result, as it was
            gate.ran[call_id] = ToolResultPart.model_validate(kept["ran"])
            approvals[call_id] = ToolApproved()
        elif kept.get("refused") is not None:
            approvals[call_id] = ToolDenied(kept["refused"])
        else:
            answer = ResolvedAction.model_validate(kept["answer"])
            gate.approved[call_id] = answer
            approvals[call_id] = ToolApproved(override_args=dict(answer.args) if answer.edited else None)
            if answer.edited:
                _rewrite(history, call_id, dict(answer.args))
    gate.asked_args.update({p["call_id"]: p["args"] for p in state["pending"]})
    return DeferredToolResults(approvals=approvals)


def _rewrite(history: list[pai.ModelMessage], call_id: str, args: dict[str, Any]) -> None:
    for message in history:
        for part in message.parts if isinstance(message, pai.ModelResponse) else ():
            if isinstance(part, pai.ToolCallPart) and part.tool_call_id == call_id:
                part.args = args


def _record(new: Sequence[pai.ModelMessage], calls: GatedCalls, gate: RiverbeamGate) -> None:
    """The run's new messages as the session's, in order: the model's text and calls, each call's tool
    message (a rejected or expired call's is the pipeline's)."""
    for message in new:
        if isinstance(message, pai.ModelResponse):
            text = "".join(p.content for p in message.parts if isinstance(p, pai.TextPart))
            made = [
                (p.tool_call_id, p.tool_name, p.args_as_dict())
                for p in message.parts
                if isinstance(p, pai.ToolCallPart)
            ]
            calls.said(text, made)
            continue
        for part in message.parts:
            told = gate.parts.get(getattr(part, "tool_call_id", None) or "")
            if told is not None and isinstance(part, pai.ToolReturnPart | pai.RetryPromptPart):
                calls.told(told)


def model_history(
    history: Sequence[Message], content: Sequence[Any]
) -> tuple[list[pai.ModelMessage], str | None]:
    """The session's messages as the framework's (the conversation so far), and the person's new input
    (the last human message) as the prompt."""
    earlier = list(history)
    prompt = "".join(p.text for p in content if isinstance(p, TextPart)) or None
    if earlier and earlier[-1].role == "human" and earlier[-1].type == "message":
        earlier.pop()
    made: list[pai.ModelMessage] = []
    for message in earlier:
        if message.type != "message":
            continue  # a person's answer to an action: its tool message says what came of it
        if message.role == "human":
            said = "".join(p.text for p in message.content if isinstance(p, TextPart))
            if said:
                made.append(pai.ModelRequest(parts=[pai.UserPromptPart(content=said)]))
        elif message.role == "ai":
            parts: list[pai.ModelResponsePart] = [
                pai.TextPart(content=p.text) for p in message.content if isinstance(p, TextPart)
            ]
            parts += [
                pai.ToolCallPart(tool_name=p.name, args=dict(p.args), tool_call_id=p.tool_call_id)
                for p in message.content
                if isinstance(p, ToolCallPart)
            ]
            if parts:
                made.append(pai.ModelResponse(parts=parts))
        else:
            returns = [_returned(p) for p in message.content if isinstance(p, ToolResultPart)]
            if (
                made
                and isinstance(made[-1], pai.ModelRequest)
                and all(isinstance(p, pai.ToolReturnPart) for p in made[-1].parts)
            ):
                made[-1].parts = [*made[-1].parts, *returns]  # one request holds a turn's results
            elif returns:
                made.append(pai.ModelRequest(parts=returns))
    return _paired(made), prompt


def _paired(made: list[pai.ModelMessage]) -> list[pai.ModelMessage]:
    """Only calls with their results and results of calls made (the window may begin between them, an
    interaction left waiting may have calls never answered): a provider refuses either alone."""
    called = {p.tool_call_id for m in made for p in m.parts if isinstance(p, pai.ToolCallPart)}
    returned = {p.tool_call_id for m in made for p in m.parts if isinstance(p, pai.ToolReturnPart)}
    for message in made:
        message.parts = [  # type: ignore[assignment]
            p
            for p in message.parts
            if not (isinstance(p, pai.ToolCallPart) and p.tool_call_id not in returned)
            and not (isinstance(p, pai.ToolReturnPart) and p.tool_call_id not in called)
        ]
    return [m for m in made if m.parts]


def _returned(part: ToolResultPart) -> pai.ToolReturnPart:
    said = part.output if part.error is None else f"{part.error.code}: {part.error.message}"
    return pai.ToolReturnPart(tool_name=part.name, content=said, tool_call_id=part.tool_call_id)

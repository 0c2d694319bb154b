"""StrandsRunner: a `strands.Agent` inside Riverbeam (CONTRACT 15). Every tool call passes the gate in a
`BeforeToolCallEvent` hook of Riverbeam's (strands_gate.py); a run that asks ends on the framework's own
interrupts and keeps, as its state, the agent's session snapshot (`take_snapshot(preset="session")`: its
messages, interrupt state with the pending tool execution, agent state), the calls asked and their
interrupts. The resume loads the snapshot and answers the interrupts (`agent([{"interruptResponse":
...}])`) once every call of the turn is answered: answers that come before are kept in the state. The
agent's session repository, if any, is not needed: Riverbeam keeps the state beside the interaction."""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from beam_store import TextPart, TokenUsage, ToolCallPart, ToolResultPart
from jsonschema.exceptions import SchemaError
from jsonschema.validators import validator_for
from referencing.exceptions import Unresolvable
from strands import Agent, Snapshot
from strands.hooks import AfterToolCallEvent, BeforeToolCallEvent, MessageAddedEvent
from strands.middleware import ExecuteToolStage

from ..agent.registry import AgentInput, Emit, RunnerFailure
from ..errors import BeamError
from ..models import AgentResult, TextDeltaFrame
from .calls import GatedCalls, complete, schema_fingerprint
from .strands_gate import RiverbeamHooks

if TYPE_CHECKING:
    from beam_store.records import Message
    from strands.agent import AgentResult as StrandsResult

UNANSWERABLE_CODE = "BEM-094"  # an interrupt no gated call raised (a tool's own)


class StrandsRunner:
    """Runs `agent` (a `strands.Agent`) with its tools behind Riverbeam's gate. One run at a time: the
    agent's messages and interrupt state are loaded into it for each run, from the session or the state."""

    decides_calls = True
    keeps_state = True

    def __init__(self, agent: Agent) -> None:
        if not isinstance(agent, Agent):
            raise TypeError(f"StrandsRunner takes a strands.Agent, not {type(agent).__name__}")
        self.agent = agent
        _untouched_threads()
        self.hooks = RiverbeamHooks()
        # registered after the user's own hooks: a call they interrupt is seen as marked
        agent.hooks.add_callback(BeforeToolCallEvent, self.hooks.before)
        agent.hooks.add_callback(AfterToolCallEvent, self.hooks.after)
        agent.hooks.add_callback(MessageAddedEvent, self.hooks.added)
        agent.add_middleware(ExecuteToolStage, self.hooks.wrap)
        self._fresh = agent.take_snapshot(preset="session").to_dict()
        self._lock = threading.Lock()

    def schemas(self) -> dict[str, dict[str, Any]]:
        """The agent's tools' input schemas (JSON Schema), by name."""
        found = {}
        for spec in self.agent.tool_registry.get_all_tool_specs():
            schema = spec.get("inputSchema", {}).get("json", {})
            found[spec["name"]] = dict(schema) if isinstance(schema, dict) else {}
        return found

    def validate_args(self, tool: str, args: dict[str, Any]) -> list[tuple[str, str]]:
        """What in `args` does not fit the tool's input schema, strictly (jsonschema: "2" is no integer)."""
        schema = self.schemas().get(tool)
        if schema is None:
            return []
        try:  # the agent's own code's schema (not a remote server's): jsonschema as it is, fetching nothing
            kind = validator_for(schema)
            kind.check_schema(schema)
        except SchemaError as error:
            return [("args", f"the tool's input schema is not a JSON Schema: {error.message[:200]}")]
        try:
            found = sorted(kind(schema).iter_errors(args), key=lambda e: [str(p) for p in e.path])
        except (Unresolvable, RecursionError) as error:  # a $ref outside the schema: never fetched
            return [("args", f"the tool's input schema cannot be checked: {type(error).__name__}")]
        return [(".".join(str(p) for p in e.path) or "args", e.message[:200]) for e in found[:20]]

    def editable(self, tool: str) -> bool:
        return True

    def grantable(self, tool: str) -> bool:
        return True

    def fingerprint(self) -> dict[str, Any]:
        return schema_fingerprint(self.agent.name or "strands", self.schemas())

    def run(self, input: AgentInput, emit: Emit) -> AgentResult:
        state = input.state if isinstance(input.state, dict) else None
        ids = state.get("ids") if state else None
        calls = GatedCalls(
            input, emit, validate=self.validate_args, marked=lambda tool: self.hooks.marking, ids=ids
        )
        with self._lock:
            self.hooks.begin(calls, state)
            try:
                return complete(self._run(input, calls, state))
            except Exception as error:  # what ran (or was denied) before the failure is still recorded
                partial = AgentResult(
                    messages=list(calls.messages),
                    tool_outcomes=dict(calls.outcomes),
                    decided=list(calls.decided),
                )
                raise RunnerFailure(error, partial) from error
            finally:
                self.hooks.begin(None)

    async def _run(self, input: AgentInput, calls: GatedCalls, state: dict[str, Any] | None) -> AgentResult:
        prompts: list[Any]
        if state is not None and state.get("pending"):
            if calls.kept_answers(state):  # a call of the turn not answered yet: asked again, the rest kept
                return calls.result(state=state)
            self.agent.load_snapshot(Snapshot.from_dict(state["snapshot"]))
            self.hooks.answers = state["answers"]
            # a person's message sent with the answers (or the one an expiry answered): a turn after them
            said = "".join(p.text for p in input.content if isinstance(p, TextPart))
            prompts = [self.hooks.responses(_interrupts(self.agent))] + ([said] if said else [])
        else:
            fresh = copy.deepcopy(self._fresh)
            fresh["data"]["messages"], prompt = agent_history(input.history, input.content)
            self.agent.load_snapshot(Snapshot.from_dict(fresh))
            prompts = [prompt]
        for prompt in prompts:
            result = await self._stream(prompt, calls)
            while result.stop_reason == "interrupt":
                given = self.hooks.responses(list(result.interrupts or []))
                if not given:  # only calls waiting for a person: the run pauses
                    unknown = self.hooks.unknown(list(result.interrupts or []))
                    if unknown:
                        said = f"interrupts other than a BeforeToolCallEvent hook's: {unknown}"
                        raise BeamError(UNANSWERABLE_CODE, said)
                    return calls.result(state=self._paused(calls), usage=self._usage())
                result = await self._stream(given, calls)  # calls the gate decided itself: they go on
        return calls.result(_text(result), usage=self._usage())

    async def _stream(self, prompt: Any, calls: GatedCalls) -> StrandsResult:
        found: StrandsResult | None = None
        async for event in self.agent.stream_async(prompt):  # to its end: Strands closes its spans there
            if isinstance(event.get("data"), str) and event["data"]:
                calls.emit(TextDeltaFrame(text=event["data"]))
            if "result" in event:
                found = event["result"]
        assert found is not None, "the agent's stream ended without a result"
        return found

    def _paused(self, calls: GatedCalls) -> dict[str, Any]:
        """The state a paused run keeps: the agent's snapshot, the calls asked (their Riverbeam ids and
        interrupts)."""
        asked = calls.asks
        by_action = {v: k for k, v in calls.ids.items()}
        pending: list[dict[str, Any]] = [
            {"call_id": by_action[str(a.action_id)], "tool": a.tool, "args": a.args} for a in asked
        ]
        return {
            "snapshot": self.agent.take_snapshot(preset="session").to_dict(),
            "ids": dict(calls.ids),
            "pending": pending,
            "interrupts": {p["call_id"]: self.hooks.interrupts.get(p["call_id"], []) for p in pending},
            "answers": {},
        }

    def _usage(self) -> TokenUsage | None:
        used = self.hooks.usage
        if not any(u.input_tokens or u.output_tokens for u in used):
            return None
        return TokenUsage(
            input_tokens=sum(u.input_tokens for u in used), output_tokens=sum(u.output_tokens for u in used)
        )


def _untouched_threads() -> None:
    """Strands instruments `threading` for the whole process when it makes its tracer (its first Agent):
    every thread would then start in its starter's span context. Undone, so Riverbeam's spans keep the
    parents they have without Strands; Strands sets no tracer provider (its spans go to the process's)."""
    from opentelemetry.instrumentation.threading import ThreadingInstrumentor
    from strands.telemetry import tracer

    tracer.get_tracer()  # made now if not yet: it instruments once, then never again
    instrumentor = ThreadingInstrumentor()
    if instrumentor.is_instrumented_by_opentelemetry:
        instrumentor.uninstrument()


def _interrupts(agent: Agent) -> list[Any]:
    return list(agent._interrupt_state.interrupts.values())


def _text(result: StrandsResult) -> str:
    content = result.message.get("content", []) if result.message else []
    return "".join(b["text"] for b in content if "text" in b)


def agent_history(
    history: Sequence[Message], content: Sequence[Any]
) -> tuple[list[dict[str, Any]], str | None]:
    """The session's messages as Strands' (the conversation so far: a role's messages in a row merged, as
    Bedrock wants them), and the person's new input (the last human message) as the prompt."""
    earlier = list(history)
    prompt = "".join(p.text for p in content if isinstance(p, TextPart)) or None
    if earlier and earlier[-1].role == "human" and earlier[-1].type == "message":
        earlier.pop()
    kept = [m for m in earlier if m.type == "message"]  # a person's answer: its tool message says it
    made: list[dict[str, Any]] = []
    paired = _paired(kept)
    for message in kept:
        blocks = [b for b in _blocks(message) if _block_id(b) in paired]
        role = "assistant" if message.role == "ai" else "user"
        if not blocks:
            continue
        if made and made[-1]["role"] == role:
            made[-1]["content"] += blocks
        else:
            made.append({"role": role, "content": blocks})
    return made, prompt


def _block_id(block: dict[str, Any]) -> str | None:
    """The call a toolUse or toolResult block belongs to; None for text."""
    found = block.get("toolUse") or block.get("toolResult")
    return str(found["toolUseId"]) if found else None


def _paired(messages: Sequence[Message]) -> set[str | None]:
    """The calls with both their call and their result in `messages` (a model takes no call without its
    result, nor a result without its call), and None: text is always kept."""
    calls = {p.tool_call_id for m in messages for p in m.content if isinstance(p, ToolCallPart)}
    results = {p.tool_call_id for m in messages for p in m.content if isinstance(p, ToolResultPart)}
    return {None, *(calls & results)}


def _blocks(message: Message) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for part in message.content:
        if isinstance(part, TextPart) and part.text:
            blocks.append({"text": part.text})
        elif isinstance(part, ToolCallPart):
            blocks.append(
                {"toolUse": {"toolUseId": part.tool_call_id, "name": part.name, "input": dict(part.args)}}
            )
        elif isinstance(part, ToolResultPart):
            said = part.output if part.error is None else f"{part.error.code}: {part.error.message}"
            text = said if isinstance(said, str) else json.dumps(said)
            status = "success" if part.error is None else "error"
            blocks.append(
                {
                    "toolResult": {
                        "toolUseId": part.tool_call_id,
                        "status": status,
                        "content": [{"text": text}],
                    }
                }
            )
    return blocks

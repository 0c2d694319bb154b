"""OpenAIAgentsRunner: an `agents.Agent` (the OpenAI Agents SDK) inside Riverbeam (CONTRACT 15). Every tool
call passes the gate (openai_agents_gate.py); a run that asks ends on the SDK's own interruptions and keeps,
as its state, the SDK's paused `RunState` (`to_json`) with the calls asked. The resume reads it back
(`RunState.from_json`) once every call of the turn is answered (answers that come before are kept in the
state) and answers each the SDK's way: `state.approve(item)` (the tool then runs with the approved args,
edited where a person edited them), `state.reject(item, rejection_message=why)` for a rejection or an
expiry. `always_approve` is never used: a standing grant is Riverbeam's (its gate), never the SDK's."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from agents import Agent, FunctionTool, RunConfig, Runner
from agents.run_state import RunState
from beam_store import TextPart, TokenUsage
from openai.types.responses import ResponseTextDeltaEvent

from ..agent.registry import AgentInput, Emit, ResolvedAction, RunnerFailure
from ..models import AgentResult, TextDeltaFrame
from .calls import Verdict, complete, schema_fingerprint
from .openai_agents_gate import Gate, call_args, json_object, jsonable, params_model, problems
from .openai_agents_items import model_input, record

if TYPE_CHECKING:
    from agents.items import ToolApprovalItem
    from agents.result import RunResultStreaming
    from pydantic import BaseModel

# runs of the SDK one Riverbeam run may make: a call the SDK stopped for itself (its args not a JSON
# object) is decided after it stops, and the run goes on
ROUNDS = 8


class OpenAIAgentsRunner:
    """Runs `agent` (an `agents.Agent`) with its function tools behind Riverbeam's gate."""

    decides_calls = True
    keeps_state = True

    def __init__(self, agent: Agent[Any]) -> None:
        if not isinstance(agent, Agent):
            raise TypeError(f"OpenAIAgentsRunner takes an agents.Agent, not {type(agent).__name__}")
        ungated = [type(t).__name__ for t in agent.tools if not isinstance(t, FunctionTool)]
        # an agent as a tool runs its own tools out of the gate's sight
        ungated += [
            f"{t.name} (an agent as a tool)" for t in agent.tools if getattr(t, "_is_agent_tool", False)
        ]
        ungated += ["handoffs"] * bool(agent.handoffs) + ["mcp_servers"] * bool(agent.mcp_servers)
        if ungated:  # calls Riverbeam's gate could not see
            raise ValueError(
                f"OpenAIAgentsRunner gates function tools only; the agent {agent.name!r} also has: "
                + ", ".join(sorted(set(ungated)))
            )
        self.agent = agent
        self._models: dict[str, type[BaseModel] | None] = {}

    def function_tools(self) -> dict[str, FunctionTool]:
        """The agent's function tools, by name."""
        return {t.name: t for t in self.agent.tools if isinstance(t, FunctionTool)}

    def validate_args(self, tool: str, args: dict[str, Any]) -> list[tuple[str, str]]:
        """What in `args` does not fit the tool's schema, strictly (no coercion: "2" is no int)."""
        found = self.function_tools().get(tool)
        if found is None:
            return []
        if tool not in self._models:
            self._models[tool] = params_model(found)
        return problems(found, self._models[tool], args)

    def editable(self, tool: str) -> bool:
        return True

    def grantable(self, tool: str) -> bool:
        return True

    def fingerprint(self) -> dict[str, Any]:
        tools = self.function_tools().items()
        return schema_fingerprint(self.agent.name, {name: t.params_json_schema for name, t in tools})

    def run(self, input: AgentInput, emit: Emit) -> AgentResult:
        state = input.state if isinstance(input.state, dict) else None
        gate = Gate(input, emit, self.validate_args, ids=state.get("ids") if state else None)
        try:
            return complete(self._run(input, gate, state))
        except Exception as error:  # what ran (or was denied) before the failure is still recorded
            calls = gate.calls
            partial = AgentResult(
                messages=list(calls.messages),
                tool_outcomes=dict(calls.outcomes),
                decided=list(calls.decided),
                denied_when_run=list(calls.denied_when_run),
            )
            raise RunnerFailure(error, partial) from error

    async def _run(self, input: AgentInput, gate: Gate, state: dict[str, Any] | None) -> AgentResult:
        calls = gate.calls
        agent = self.agent.clone(tools=[gate.tool(t) for t in self.function_tools().values()])
        start: str | list[Any] | RunState[Any, Any]
        if state is not None and state.get("pending"):
            if calls.kept_answers(state):  # a call of the turn not answered yet: asked again, the rest kept
                return calls.result(state=state)
            start = await RunState.from_json(agent, state["run"])
            _answer(start, state["answers"], gate)
            said = "".join(p.text for p in input.content if isinstance(p, TextPart))
            if said:  # a person's message sent with the answers (or the one an expiry answered)
                start.add_input(said)
            seen, before = int(state.get("seen") or 0), state.get("used")
        else:
            start, seen, before = model_input(input.history, input.content), 0, None
        for _ in range(ROUNDS):
            result = Runner.run_streamed(agent, start, run_config=RunConfig(tracing_disabled=True))
            await _stream(result, calls.emit)
            if not result.interruptions:
                break
            start = result.to_state()
            asked = _settle(start, result.interruptions, gate)
            if asked:
                record(result.new_items[seen:], gate)
                paused = _paused(start, asked, gate, len(result.new_items)) | {"used": _used(result)}
                return calls.result(state=paused, usage=_usage(result, before))
        else:
            raise RuntimeError(f"the SDK stopped {ROUNDS} times without a call to ask about")
        record(result.new_items[seen:], gate)
        return calls.result(_text(result.final_output), usage=_usage(result, before))


async def _stream(result: RunResultStreaming, emit: Emit) -> None:
    """The SDK's streamed events: its text deltas as frames (the calls' frames are the gate's)."""
    async for event in result.stream_events():
        data = event.data if event.type == "raw_response_event" else None
        if isinstance(data, ResponseTextDeltaEvent) and data.delta:
            emit(TextDeltaFrame(text=data.delta))


def _text(output: Any) -> str:
    return "" if output is None else output if isinstance(output, str) else json.dumps(jsonable(output))


def _used(result: RunResultStreaming) -> dict[str, int]:
    """The tokens the SDK counted (since the run began, across its pauses)."""
    used = result.context_wrapper.usage
    cached = used.input_tokens_details.cached_tokens or 0
    return {
        "input_tokens": used.input_tokens,
        "output_tokens": used.output_tokens,
        "cache_read_tokens": cached,
    }


def _usage(result: RunResultStreaming, before: dict[str, int] | None) -> TokenUsage | None:
    """This run's tokens: the SDK's count less what it had counted at the pause this run resumed."""
    now, before = _used(result), before or {}
    used = {key: max(value - int(before.get(key, 0)), 0) for key, value in now.items()}
    return TokenUsage(**used) if used["input_tokens"] or used["output_tokens"] else None


def _settle(state: RunState[Any, Any], stopped: list[ToolApprovalItem], gate: Gate) -> list[dict[str, Any]]:
    """The calls the SDK stopped for: those the gate asks about (kept pending), the rest answered in
    `state` as the gate decides them (a call the SDK stopped for itself is decided here)."""
    asked = []
    for item in stopped:
        call_id, tool, args = _call(item)
        verdict = gate.verdicts.get(call_id)
        if verdict is None:  # the SDK's own stop (its mark), for args it could not read
            unreadable = json_object(getattr(item, "arguments", None)) is None
            verdict = gate.propose(call_id, tool, args, True, unreadable=unreadable)
        if verdict.effect == "ask":
            asked.append({"call_id": call_id, "tool": tool, "args": args})
        elif verdict.effect == "allow":
            state.approve(item)
        else:
            state.reject(item, rejection_message=verdict.message)
    return asked


def _call(item: ToolApprovalItem) -> tuple[str, str, dict[str, Any]]:
    raw = item.raw_item
    call_id = raw.get("call_id") if isinstance(raw, dict) else getattr(raw, "call_id", None)
    arguments = raw.get("arguments") if isinstance(raw, dict) else getattr(raw, "arguments", None)
    return str(call_id), item.tool_name or "", call_args(arguments)


def _paused(state: RunState[Any, Any], asked: list[dict[str, Any]], gate: Gate, seen: int) -> dict[str, Any]:
    """The state a paused run keeps: the SDK's RunState, the calls asked (their Riverbeam ids), how many of
    the SDK's items the session's messages hold already."""
    return {
        "run": state.to_json(),
        "ids": dict(gate.calls.ids),  # every call of the run seen so far (the asked ones among them)
        "pending": asked,
        "answers": {},
        "seen": seen,
    }


def _answer(state: RunState[Any, Any], answers: dict[str, Any], gate: Gate) -> None:
    """Each asked call answered the SDK's way: approved (to run with the approved args, or the edited
    ones), or rejected with what the model is told (a rejection's reason, an expiry, a BEM-084 refusal
    where the SDK would run other args than those asked about)."""
    for item in state.get_interruptions():
        call_id, _tool, args = _call(item)
        kept = answers.get(call_id)
        if kept is None:
            raise RuntimeError(f"the SDK stopped for a call Riverbeam never asked about: {item.tool_name}")
        if kept.get("refused") is not None:
            state.reject(item, rejection_message=kept["refused"])
            continue
        answer = ResolvedAction.model_validate(kept["answer"])
        runs = gate.calls.runs_with(answer, args)
        if isinstance(runs, Verdict):
            assert runs.refusal is not None
            gate.parts[call_id] = runs.refusal
            state.reject(item, rejection_message=runs.message)
            continue
        gate.approved[call_id] = (answer, runs)
        state.approve(item)  # never always_approve: a grant is Riverbeam's gate

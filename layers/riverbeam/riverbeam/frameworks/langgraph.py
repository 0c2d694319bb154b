"""LangGraphRunner: an agent made by `langchain.agents.create_agent` inside Riverbeam (CONTRACT 15).

The runner compiles the agent's own graph again with what it brings: a checkpointer (an InMemorySaver per
run, its checkpoint kept as the interaction's state) and a stop before every tools step, where each call
of the turn passes Riverbeam's gate (GatedCalls) before any tool runs. A tool the agent's
HumanInTheLoopMiddleware marks asks under the baseline; its interrupt is answered with the middleware's
own decisions (`Command(resume=...)`: approve, edit, reject with the reason). Every other call is held
by the runner's own gate, wrapped around the tools node: it runs what was allowed or approved (with the
edited args), tells the model why the rest did not run, and holds each call still waiting for a person
at an interrupt of its own while the others run (their results kept as the checkpoint's pending writes,
so none runs twice). The model goes on once every call of the turn is answered."""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from beam_store import ErrorInfo, TokenUsage, canonical_json

from ..agent.registry import AgentInput, Emit, RunnerFailure
from ..models import AgentResult, TextDeltaFrame
from . import langgraph_state as kept_state
from . import langgraph_turn as turns
from .calls import GatedCalls
from .langgraph_turn import Call, Plan, Turn

if TYPE_CHECKING:
    from langchain_core.messages import ToolMessage
    from langchain_core.runnables import RunnableConfig

TOOLS_NODE = "tools"
# the key of the runner's own interrupt's value: the id of the call its gate holds
HELD = "riverbeam_held_call"
# prepended to the result of a call the person edited where the middleware did not edit it itself
EDIT_NOTICE = "A person edited this tool call before it ran; it ran with the arguments {args}."
# the graph's stops in one run (each tools step and each interrupt is one): a graph that never ends
MAX_STOPS = 64


def _tool_schema(tool: Any) -> Any:
    schema = getattr(tool, "tool_call_schema", None) or getattr(tool, "args_schema", None)
    return schema


class LangGraphRunner:
    decides_calls = True
    keeps_state = True

    def __init__(self, graph: Any, *, name: str | None = None) -> None:
        """`graph`: what `create_agent(model, tools, middleware=[...])` made, with no checkpointer."""
        from langchain.agents.middleware import HumanInTheLoopMiddleware

        builder = getattr(graph, "builder", None)
        nodes = getattr(builder, "nodes", None)
        if builder is None or not isinstance(nodes, dict) or TOOLS_NODE not in nodes:
            raise TypeError("LangGraphRunner takes a graph made by langchain.agents.create_agent, with tools")
        self.name = name or graph.get_name()
        self._tools: dict[str, Any] = dict(nodes[TOOLS_NODE].runnable.tools_by_name)
        found = [getattr(getattr(spec.runnable, "func", None), "__self__", None) for spec in nodes.values()]
        self._hitl = next((m for m in found if isinstance(m, HumanInTheLoopMiddleware)), None)
        self._plans: dict[str, dict[str, Plan]] = {}
        self._lock = threading.Lock()
        self._graph = self._compiled(graph)

    def _compiled(self, graph: Any) -> Any:
        """The agent's graph with the runner's gate around its tools node and a stop before it."""
        builder = copy.copy(graph.builder)
        builder.nodes = dict(builder.nodes)
        spec = builder.nodes[TOOLS_NODE]
        node = copy.copy(spec.runnable)
        inner = node._wrap_tool_call
        node._wrap_tool_call = lambda request, handler: self._gate(request, handler, inner)
        node._awrap_tool_call = None  # the runner streams synchronously: one gate
        node.func, node.afunc = node._func, node._afunc  # bound to the copy, not to the agent's node
        builder.nodes[TOOLS_NODE] = dataclasses.replace(spec, runnable=node)
        return builder.compile(
            interrupt_before=[TOOLS_NODE], store=graph.store, cache=graph.cache, name=graph.get_name()
        )

    # what the pipeline asks of a runner

    def fingerprint(self) -> dict[str, Any]:
        tools = {}
        for name, tool in sorted(self._tools.items()):
            schema = _tool_schema(tool)
            shown = schema.model_json_schema() if hasattr(schema, "model_json_schema") else schema
            tools[name] = hashlib.sha256(canonical_json(shown or {}).encode()).hexdigest()
        return {"agent": self.name, "tools": tools}

    def validate_args(self, tool: str, args: dict[str, Any]) -> list[tuple[str, str]]:
        """What in `args` does not fit the tool's schema, strictly (`"two"` is not an int, nor `"2"`)."""
        from pydantic import BaseModel, ValidationError

        schema = _tool_schema(self._tools.get(tool))
        try:
            if isinstance(schema, type) and issubclass(schema, BaseModel):
                schema.model_validate_json(canonical_json(args), strict=True)
            elif isinstance(schema, dict):
                import jsonschema

                validator = jsonschema.Draft202012Validator(schema)
                return [(".".join(map(str, e.path)), e.message) for e in validator.iter_errors(args)]
        except ValidationError as error:
            return [(".".join(str(p) for p in e["loc"]), e["msg"]) for e in error.errors()]
        except (TypeError, ValueError) as error:
            return [("", f"the args are not JSON: {error}")]
        return []

    def editable(self, tool: str) -> bool:
        return True  # the runner's gate runs edited args where the middleware has no edit of its own

    def grantable(self, tool: str) -> bool:
        return True

    def _marked(self, tool: str) -> bool:
        return self._hitl is not None and tool in self._hitl.interrupt_on

    def _allows(self, tool: str) -> list[str]:
        """The decisions the middleware takes for the tool (none: it does not mark it)."""
        config: Any = self._hitl.interrupt_on.get(tool, {}) if self._hitl is not None else {}
        return list(config.get("allowed_decisions", [])) if isinstance(config, dict) else []

    def _edits(self, tool: str) -> bool:
        """Whether the middleware runs a person's edit of the tool's call itself (and tells the model)."""
        return "edit" in self._allows(tool)

    # a run

    def run(self, input: AgentInput, emit: Emit) -> AgentResult:
        state = input.state if isinstance(input.state, dict) else {}
        calls = GatedCalls(
            input, emit, validate=self.validate_args, marked=self._marked, ids=state.get("ids")
        )
        try:
            return self._run(input, emit, calls, state)
        except Exception as error:  # what ran before the failure is still recorded
            partial = AgentResult(
                messages=calls.messages, tool_outcomes=calls.outcomes, decided=calls.decided
            )
            raise RunnerFailure(error, partial) from error
        finally:
            with self._lock:
                self._plans.pop(input.run_id, None)

    def _run(self, input: AgentInput, emit: Emit, calls: GatedCalls, state: dict[str, Any]) -> AgentResult:
        from langgraph.checkpoint.memory import InMemorySaver
        from langgraph.types import Command

        saver = InMemorySaver()
        graph = self._graph.copy(update={"checkpointer": saver})
        config: RunnableConfig = {"configurable": {"thread_id": input.run_id}}
        turn = Turn(state)
        turn.answers.update({a.action_id: a for a in input.actions})
        payload: Any = None
        resuming = bool(state.get("graph"))  # the graph stands at its pause: decided before it streams
        # a person's message that came with the resume (or with an invoke after an expiry): the model
        # reads it once the paused turn is over
        said = kept_state.said_now(input, state.get("said")) if resuming else None
        if resuming:
            kept_state.restored(saver, config, state["graph"])
        else:
            payload = {"messages": kept_state.conversation(input)}
        usage: TokenUsage | None = None
        unheld: set[str | None] = set()  # calls this run let go of the runner's interrupt
        for _ in range(MAX_STOPS):
            if not resuming:
                usage = self._stream(graph, payload, config, calls, emit, usage)
            resuming = False
            snapshot = graph.get_state(config)
            if not snapshot.next and said is None:
                return calls.result(kept_state.text_of(snapshot.values["messages"][-1]), usage=usage)
            if not snapshot.next:
                graph.update_state(config, {"messages": [said]}, as_node=TOOLS_NODE)  # on to the model
                said, payload = None, None
                continue
            pending = turns.pending(snapshot.values["messages"])
            waiting = turn.decide(calls, pending)
            if waiting and len(waiting) == len(pending):  # nothing can go on before a person answers
                kept = {"graph": kept_state.saved(saver, config), "ids": calls.ids, **turn.dump()}
                kept["said"] = kept_state.text_of(said) if said is not None else None  # still unread
                return calls.result(state=kept, usage=usage)
            plans = {c.call_id: turn.settle(calls, c, self._edits(c.tool)) for c in pending}
            unheld |= {_held(i.value) for i in snapshot.interrupts} - waiting
            with self._lock:
                self._plans[input.run_id] = {k: p._replace(unhold=k in unheld) for k, (p, _) in plans.items()}
            decisions = {k: d for k, (_, d) in plans.items()}
            answers = {
                i.id: self._resume(i.value, pending, decisions)
                for i in snapshot.interrupts
                if _held(i.value) not in waiting  # a call still held stays at its interrupt
            }
            if any("action_requests" in (i.value or {}) for i in snapshot.interrupts):
                turn.held |= waiting  # the middleware approved them: the runner's gate holds them
            payload = Command(resume=answers) if answers else None
        from ..errors import BeamError

        raise BeamError("BEM-041", f"the agent's graph stopped more than {MAX_STOPS} times in one run")

    def _stream(
        self,
        graph: Any,
        payload: Any,
        config: RunnableConfig,
        calls: GatedCalls,
        emit: Emit,
        usage: TokenUsage | None,
    ) -> TokenUsage | None:
        """Run the graph to its next stop: text deltas sent, the model's messages and the tools' results
        recorded as they come."""
        from langchain_core.messages import AIMessage, AIMessageChunk, ToolMessage

        for mode, chunk in graph.stream(payload, config, stream_mode=["messages", "updates"]):
            if mode == "messages":
                message, meta = chunk
                if isinstance(message, AIMessageChunk) and meta.get("langgraph_node") == "model":
                    text = kept_state.text_of(message)
                    if text:
                        emit(TextDeltaFrame(text=text))
                continue
            for node, update in chunk.items():
                messages = update.get("messages", []) if isinstance(update, dict) else []
                for message in messages:
                    if node == "model" and isinstance(message, AIMessage):
                        said = [(c["id"] or "", c["name"], dict(c["args"])) for c in message.tool_calls]
                        calls.said(kept_state.text_of(message), said)
                        usage = _added(usage, message.usage_metadata)
                    elif node == TOOLS_NODE and isinstance(message, ToolMessage):
                        self._ran(calls, message, config)
        return usage

    def _ran(self, calls: GatedCalls, message: ToolMessage, config: RunnableConfig) -> None:
        """A tools step's result: recorded where the tool ran (a refusal was recorded when decided)."""
        run_id = str(config.get("configurable", {}).get("thread_id"))
        with self._lock:
            plan = self._plans.get(run_id, {}).get(message.tool_call_id)
        if plan is None or plan.refusal is not None:
            return
        action_id = calls.action_id(message.tool_call_id)
        text = kept_state.text_of(message)
        error = ErrorInfo(code="BEM-331", message=text) if message.status == "error" else None
        part = calls.ran(action_id, message.name or "", None if error else text, error)
        if plan.args is not None and plan.edited:
            part.edited_args = dict(plan.args)
        calls.told(part)

    def _gate(self, request: Any, handler: Any, inner: Any) -> Any:
        """The runner's own gate around the tools node: a call runs only as the runner decided it."""
        from langchain_core.messages import ToolMessage

        call = request.tool_call
        run_id = str(request.runtime.config.get("configurable", {}).get("thread_id"))
        with self._lock:
            plan = self._plans.get(run_id, {}).get(call["id"])
        if plan is None:  # never decided: never run
            plan = Plan(refusal=f"{call['name']}: the call was not decided by Riverbeam's gate")
        if plan.wait or plan.unhold:  # held while the turn's other calls run, until a person answers
            from langgraph.types import interrupt

            interrupt({HELD: call["id"]})  # raises while held; once answered, returns
        if plan.refusal is not None:
            return ToolMessage(
                content=plan.refusal, tool_call_id=call["id"], name=call["name"], status="error"
            )
        if plan.args is not None:
            request = request.override(tool_call={**call, "args": dict(plan.args)})
        result = self._traced(plan, request, lambda: inner(request, handler) if inner else handler(request))
        if plan.notice and isinstance(result, ToolMessage):
            notice = EDIT_NOTICE.format(args=canonical_json(plan.args or {}))
            result = result.model_copy(update={"content": f"{notice}\n\n{kept_state.text_of(result)}"})
        return result

    @staticmethod
    def _traced(plan: Plan, request: Any, run: Callable[[], Any]) -> Any:
        """The tool's call in its `execute_tool` span: `ask` where a person approved it, else `allow`."""
        from langchain_core.messages import ToolMessage

        from ..telemetry import spans

        call, answer = request.tool_call, plan.answer
        with spans.tool_span(
            tool=call["name"],
            call_id=plan.action_id,
            args=call["args"],
            decision="ask" if answer is not None else "allow",
            action_id=answer.action_id if answer is not None else None,
            args_sha256=answer.args_sha256 if answer is not None else None,
            decided_by=answer.decided_by if answer is not None else None,
        ) as span:
            result = run()
            failed = isinstance(result, ToolMessage) and result.status == "error"
            spans.tool_outcome(span, status="error" if failed else "ok", code="BEM-331" if failed else None)
        return result

    def _resume(self, value: Any, pending: list[Call], decisions: dict[str, dict[str, Any]]) -> Any:
        """The middleware's interrupt answered as Riverbeam decided: batched (one decision per call it
        asked about, in order) or per call."""
        if isinstance(value, dict) and HELD in value:  # the runner's own: it goes on as planned
            return True
        if isinstance(value, dict) and value.get("type") == "tool_approval":
            return self._allowed(value["name"], decisions[value["tool_call_id"]])
        requests = list(value.get("action_requests", [])) if isinstance(value, dict) else []
        answered: list[dict[str, Any]] = []
        for call in pending:
            if len(answered) < len(requests):
                asked = requests[len(answered)]
                if asked["name"] == call.tool and asked["args"] == call.args:
                    answered.append(self._allowed(call.tool, decisions[call.call_id]))
        return {"decisions": answered}

    def _allowed(self, tool: str, decision: dict[str, Any]) -> dict[str, Any]:
        """The decision as the middleware takes it; one it does not allow for the tool is an approval
        (the runner's own gate then edits or refuses the call)."""
        return decision if decision["type"] in self._allows(tool) else {"type": "approve"}


def _added(usage: TokenUsage | None, reported: Any) -> TokenUsage | None:
    if not reported:
        return usage
    used = TokenUsage(
        input_tokens=reported.get("input_tokens", 0), output_tokens=reported.get("output_tokens", 0)
    )
    return used if usage is None else usage + used


def _held(value: Any) -> str | None:
    """The call the runner's own interrupt holds (None: the middleware's interrupt)."""
    return value.get(HELD) if isinstance(value, dict) else None

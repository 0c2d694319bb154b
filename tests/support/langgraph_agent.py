"""A LangGraph agent made by `create_agent`, offline, inside a RiverBeam: LangChain's fake chat model made to
emit tool calls, two counted tools (`push`, marked by the agent's HumanInTheLoopMiddleware; `read`, not
marked), and the helpers the LangGraph runner's tests share."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from typing import Any

from beam_store import BeamStore
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGenerationChunk
from langchain_core.tools import tool
from pydantic import Field
from riverbeam import AgentResult, Policy, RiverBeam
from riverbeam.frameworks import LangGraphRunner

from tests.support.agents import invoke_body

Turn = AIMessage | Callable[[list[BaseMessage]], AIMessage]


def told(messages: list[BaseMessage]) -> AIMessage:
    """The model's answer to its last turn's tool results: what each told it."""
    last = max(i for i, m in enumerate(messages) if isinstance(m, AIMessage))
    results = [str(m.content) for m in messages[last:] if isinstance(m, ToolMessage)]
    return AIMessage(content="told: " + " | ".join(results))


class ScriptedChatModel(GenericFakeChatModel):
    """GenericFakeChatModel whose n-th answer is `script[n]` (n: the ai messages it has been shown, so a
    resume in another process goes on from where the pause was), streamed word by word, then its calls."""

    messages: Iterator[AIMessage] = Field(default_factory=lambda: iter(()))
    script: list[Any] = Field(default_factory=list)
    seen: list[list[BaseMessage]] = Field(default_factory=list)

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:
        return self

    def _stream(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> Iterator[ChatGenerationChunk]:
        self.seen.append(list(messages))
        turn = self.script[min(sum(isinstance(m, AIMessage) for m in messages), len(self.script) - 1)]
        message = turn if isinstance(turn, AIMessage) else turn(list(messages))
        text = message.content if isinstance(message.content, str) else ""
        for token in re.split(r"(\s)", text) if text else []:
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=token))
            if run_manager:
                run_manager.on_llm_new_token(token, chunk=chunk)
            yield chunk
        calls = [
            {"name": c["name"], "args": json.dumps(c["args"]), "id": c["id"], "index": i}
            for i, c in enumerate(message.tool_calls)
        ]
        usage = {"input_tokens": 3, "output_tokens": 2, "total_tokens": 5}
        yield ChatGenerationChunk(
            message=AIMessageChunk(content="", tool_call_chunks=calls, usage_metadata=usage)  # type: ignore[arg-type]
        )


def calls(*made: tuple[str, dict[str, Any]]) -> AIMessage:
    """An ai turn making these calls (tool, args), each with an id of its own."""
    return AIMessage(
        content="", tool_calls=[{"id": f"call_{uuid.uuid4().hex[:8]}", "name": n, "args": a} for n, a in made]
    )


class LangGraphAgent:
    """`author`, a create_agent graph in a RiverBeam on `store`: `push` (asks: the middleware marks it),
    `read` (does not); what each ran with is counted. `hitl`: the middleware's arguments."""

    def __init__(
        self,
        store: BeamStore,
        *turns: Turn,
        policy: str | None = None,
        push_takes_force: bool = False,
        hitl: dict[str, Any] | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.pushed: list[str] = []
        self.reads: list[str] = []
        self.frames: list[dict[str, Any]] = []

        def pushing(ref: str) -> str:
            self.pushed.append(ref)
            return f"pushed {ref}"

        @tool
        def push(ref: str) -> str:
            """Push a branch."""
            return pushing(ref)

        @tool("push")
        def forced_push(ref: str, force: bool = False) -> str:
            """Push a branch, maybe by force."""
            return pushing(ref)

        @tool
        def read(path: str, size: int = 4) -> str:
            """Read a file's first `size` characters."""
            self.reads.append(path)
            return "x" * size

        self.model = ScriptedChatModel(script=[*turns, told])
        middleware = HumanInTheLoopMiddleware(**(hitl or {"interrupt_on": {"push": True}}))
        tools = [forced_push if push_takes_force else push, read]
        graph = create_agent(self.model, tools, middleware=[middleware])
        self.beam = RiverBeam(store, clock=clock) if clock is not None else RiverBeam(store)
        self.beam.register_agent(
            "author", LangGraphRunner(graph), policy=Policy(policy) if policy is not None else None
        )
        self.store = store

    def invoke(
        self, text: str = "Push docs/update", session_id: str | None = None, **more: Any
    ) -> AgentResult:
        body = invoke_body(session_id=session_id, text=text, **more)
        result = self.beam.invoke(body, on_frame=lambda f: self.frames.append(f.model_dump(mode="json")))
        assert isinstance(result, AgentResult)
        return result

    def answer(
        self, result: AgentResult, index: int = 0, status: str = "submitted", text: str = "", **more: Any
    ) -> None:
        """A person's answer to the `index`-th action `result` asked for (`more`: reason, edited_args;
        `text`: a message of the person's with it)."""
        action = result.action_required[index]
        self.beam.resume(
            {
                "content": [{"type": "text", "text": text}] if text else [],
                "agent_name": "author",
                "session_id": str(result.session_id),
                "interaction_id": str(result.interaction_id),
                "actions": [
                    {
                        "action_id": str(action.action_id),
                        "kind": "confirmation",
                        "request_id": str(uuid.uuid4()),
                        "status": status,
                        "payload": {"tool": action.tool, "args": action.args},
                        **more,
                    }
                ],
                "auth_context": {"user_id": "u1"},
            },
            on_frame=lambda f: self.frames.append(f.model_dump(mode="json")),
        )

    def frames_of(self, kind: str) -> list[dict[str, Any]]:
        return [f for f in self.frames if f["type"] == kind]

    def last_text(self, result: AgentResult) -> str:
        """The session's last message's text (the resume's answer is there)."""
        last = self.store.list_messages(str(result.session_id))[-1]
        return "".join(getattr(p, "text", "") for p in last.content)

    def roles(self, result: AgentResult) -> Sequence[str]:
        return [m.role for m in self.store.list_messages(str(result.session_id))]

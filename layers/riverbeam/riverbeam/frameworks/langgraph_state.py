"""What LangGraphRunner keeps between a pause and its resume, and what it gives the graph (CONTRACT 15).

A paused graph's checkpoint is written with its checkpointer's own serde (`dumps_typed`), base64 in JSON,
with its pending writes: the Send packets of the tool calls to come and the writes of tasks that finished
before the pause (without them an approved tool that ran before the pause would run again). It is read
back into a fresh saver before the resume, so the resume may run in another process. Nothing here
imports LangGraph at `import riverbeam`: its modules are imported by the runner that needs them."""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from beam_store import TextPart, ToolCallPart, ToolResultPart

if TYPE_CHECKING:
    from beam_store.records import Message
    from langchain_core.messages import BaseMessage
    from langchain_core.runnables import RunnableConfig
    from langgraph.checkpoint.base import BaseCheckpointSaver
    from langgraph.checkpoint.serde.base import SerializerProtocol

    from ..agent.registry import AgentInput


def _typed(serde: SerializerProtocol, value: Any) -> list[str]:
    kind, data = serde.dumps_typed(value)
    return [kind, base64.b64encode(data).decode("ascii")]


def _untyped(serde: SerializerProtocol, kept: Sequence[str]) -> Any:
    return serde.loads_typed((kept[0], base64.b64decode(kept[1])))


def saved(saver: BaseCheckpointSaver[Any], config: RunnableConfig) -> dict[str, Any]:
    """The latest checkpoint of `config`'s thread, its metadata and its pending writes, as JSON."""
    found = saver.get_tuple(config)
    assert found is not None  # a graph that paused has a checkpoint
    serde = saver.serde
    return {
        "checkpoint": _typed(serde, found.checkpoint),
        "metadata": _typed(serde, found.metadata),
        "writes": [
            [task, channel, *_typed(serde, value)] for task, channel, value in found.pending_writes or ()
        ],
    }


def restored(saver: BaseCheckpointSaver[Any], config: RunnableConfig, kept: dict[str, Any]) -> None:
    """`kept` (what `saved` wrote) put into `saver` as `config`'s thread's latest checkpoint."""
    serde = saver.serde
    checkpoint = _untyped(serde, kept["checkpoint"])
    metadata = _untyped(serde, kept["metadata"])
    where: RunnableConfig = {"configurable": {**config.get("configurable", {}), "checkpoint_ns": ""}}
    put = saver.put(where, checkpoint, metadata, dict(checkpoint["channel_versions"]))
    by_task: dict[str, list[tuple[str, Any]]] = {}
    for task, channel, *value in kept["writes"]:
        by_task.setdefault(task, []).append((channel, _untyped(serde, value)))
    for task, writes in by_task.items():
        saver.put_writes(put, writes, task)


# the session's messages as LangChain's


def _said(part: ToolResultPart) -> str:
    if part.error is not None:
        return f"{part.error.code}: {part.error.message}"
    output = part.output
    return output if isinstance(output, str) else json.dumps(output, default=str)


def conversation(input: AgentInput) -> list[BaseMessage]:
    """The session's history (this step's input included) as LangChain messages: the next interaction
    sees the conversation. A call whose result is not in the history is left out (a model would refuse
    a call without its result)."""
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    history: list[Message] = list(input.history)
    answered = {p.tool_call_id for m in history for p in m.content if isinstance(p, ToolResultPart)}
    out: list[BaseMessage] = []
    for message in history:
        text = "".join(p.text for p in message.content if isinstance(p, TextPart))
        if message.role == "human" and text:
            out.append(HumanMessage(content=text))
        elif message.role == "ai":
            calls = [
                {"id": p.tool_call_id, "name": p.name, "args": dict(p.args)}
                for p in message.content
                if isinstance(p, ToolCallPart) and p.tool_call_id in answered
            ]
            if text or calls:
                out.append(AIMessage(content=text, tool_calls=calls))
        elif message.role == "tool":
            for part in message.content:
                if isinstance(part, ToolResultPart):
                    status = "success" if part.status == "ok" else "error"
                    out.append(
                        ToolMessage(
                            content=_said(part), tool_call_id=part.tool_call_id, name=part.name, status=status
                        )
                    )
    text = "".join(p.text for p in input.content if isinstance(p, TextPart))
    if not history and text:  # a runner called without the session's history: this step's input
        out.append(HumanMessage(content=text))
    return out


def said_now(input: AgentInput, unread: str | None = None) -> BaseMessage | None:
    """This step's input as a person's message, where it has text (after `unread`: what came with an
    earlier resume of the same paused turn, not read by the model yet)."""
    from langchain_core.messages import HumanMessage

    text = "".join(p.text for p in input.content if isinstance(p, TextPart))
    text = "\n\n".join(t for t in (unread, text) if t)
    return HumanMessage(content=text) if text else None


def text_of(message: Any) -> str:
    """A LangChain message's text (its content a string or a list of blocks)."""
    content = getattr(message, "content", "")
    if isinstance(content, str):
        return content
    return "".join(
        b if isinstance(b, str) else str(b.get("text", "")) if b.get("type") == "text" else ""
        for b in content
        if isinstance(b, str | dict)
    )

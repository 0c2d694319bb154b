"""The OpenAI Agents SDK's items and the session's Messages (CONTRACT 15): a run's new items recorded as
the session's messages, in order (the model's text and calls, each call's tool message), and the
session's messages given to the SDK as its input items, so the next interaction sees the conversation."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from agents import ItemHelpers, MessageOutputItem, ToolCallItem, ToolCallOutputItem
from beam_store import TextPart, ToolCallPart, ToolResultPart

from .openai_agents_gate import call_args

if TYPE_CHECKING:
    from agents.items import RunItem, TResponseInputItem
    from beam_store.records import Message

    from .openai_agents_gate import Gate


def _call_id(raw: Any) -> str:
    found = raw.get("call_id") if isinstance(raw, dict) else getattr(raw, "call_id", None)
    return str(found or "")


def record(items: Sequence[RunItem], gate: Gate) -> None:
    """The SDK's new items as the session's messages: a response's text and calls as one ai message,
    each call's tool message after (a person's rejection or an expiry: the pipeline's, not recorded
    here)."""
    text: list[str] = []
    made: list[tuple[str, str, dict[str, Any]]] = []

    def said() -> None:
        if text or made:
            gate.calls.said("".join(text), list(made))
        text.clear()
        made.clear()

    for item in items:
        if isinstance(item, MessageOutputItem):
            if made:  # a new response
                said()
            text.append(ItemHelpers.text_message_output(item))
        elif isinstance(item, ToolCallItem):
            raw = item.raw_item
            name = raw.get("name") if isinstance(raw, dict) else getattr(raw, "name", None)
            arguments = raw.get("arguments") if isinstance(raw, dict) else getattr(raw, "arguments", None)
            made.append((_call_id(raw), str(name), call_args(arguments)))
        elif isinstance(item, ToolCallOutputItem):
            said()
            part = gate.parts.get(_call_id(item.raw_item))
            if part is not None:
                gate.calls.told(part)
    said()


def model_input(history: Sequence[Message], content: Sequence[Any]) -> list[TResponseInputItem]:
    """The session's messages as the SDK's input items, the person's new input (this run's content, the
    last human message of the history) last."""
    earlier = list(history)
    if earlier and earlier[-1].role == "human" and earlier[-1].type == "message":
        earlier.pop()
    items: list[Any] = []
    for message in earlier:
        if message.type != "message":
            continue  # a person's answer to an action: its tool message says what came of it
        for part in message.content:
            if isinstance(part, TextPart) and part.text and message.role in ("human", "ai"):
                items.append(
                    {"role": "user" if message.role == "human" else "assistant", "content": part.text}
                )
            elif isinstance(part, ToolCallPart):
                arguments = json.dumps(part.args)
                items.append(
                    {
                        "type": "function_call",
                        "call_id": part.tool_call_id,
                        "name": part.name,
                        "arguments": arguments,
                    }
                )
            elif isinstance(part, ToolResultPart):
                items.append(
                    {"type": "function_call_output", "call_id": part.tool_call_id, "output": _said(part)}
                )
    prompt = "".join(p.text for p in content if isinstance(p, TextPart))
    if prompt:
        items.append({"role": "user", "content": prompt})
    return items


def _said(part: ToolResultPart) -> str:
    """What a tool message told the model: the output (as text), or the error."""
    if part.error is not None:
        return f"{part.error.code}: {part.error.message}"
    return part.output if isinstance(part.output, str) else json.dumps(part.output)

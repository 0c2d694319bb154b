"""The stored conversation as Converse `messages`: user and assistant turns alternating, every toolUse of an
assistant turn answered by a toolResult (same toolUseId) in the next user turn, and every toolResult right
after its toolUse, within a bounded window."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from beam_store.records import TextPart, ToolCallPart, ToolResultPart

from ..models import NewMessage
from ..tools import Tool

Block = dict[str, Any]
Turn = dict[str, Any]
# a result the conversation never got: the call was not answered (an action still pending, or dropped)
UNANSWERED = "No result: this tool call was not answered."

_NOT_IN_A_NAME = re.compile(r"[^A-Za-z0-9_-]")


class ConversationWindow(NamedTuple):
    """What of the conversation the model is given: at most `max_messages` turns and about
    `max_chars` characters (4 characters a token is the usual estimate), the most recent first. It starts
    at a person's message, so a toolUse is never separated from its toolResult."""

    max_messages: int = 100
    max_chars: int = 400_000


DEFAULT_WINDOW = ConversationWindow()


def tool_use_id(part: ToolCallPart) -> str:
    return part.model_call_id or part.tool_call_id


def _result_block(part: ToolResultPart, use_id: str) -> Block:
    if part.status == "ok":
        output = part.output
        content: Block = {"json": output} if isinstance(output, dict) else {"text": json.dumps(output)}
        note = f"The person edited the args before approving: it ran with {json.dumps(part.edited_args)}."
        edited = [{"text": note}] if part.edited_args is not None else []
        return {"toolResult": {"toolUseId": use_id, "content": [content, *edited], "status": "success"}}
    if part.status == "refused":
        reason = part.error.message if part.error else "refused"
        text = f"The person refused to run {part.name}, so it did not run. ({reason})"
    else:
        text = f"{part.name} failed: " + (
            f"{part.error.code}: {part.error.message}" if part.error else "error"
        )
    return {"toolResult": {"toolUseId": use_id, "content": [{"text": text}], "status": "error"}}


def _said(part: object) -> bool:
    return isinstance(part, ToolCallPart) or (isinstance(part, TextPart) and bool(part.text))


def converse_name(name: str) -> str:
    """A tool's name as Converse takes it (letters, digits, `_` and `-`, at most 64): an MCP tool's
    `<server>/<tool>` as `<server>__<tool>`, any other character as `_`."""
    return _NOT_IN_A_NAME.sub("_", name.replace("/", "__"))[:64]


def _assistant_block(part: object) -> Block:
    if isinstance(part, ToolCallPart):
        return {
            "toolUse": {"toolUseId": tool_use_id(part), "name": converse_name(part.name), "input": part.args}
        }
    assert isinstance(part, TextPart)
    return {"text": part.text}


def _turns(conversation: Sequence[NewMessage]) -> Iterable[tuple[str, list[Block]]]:
    """Each stored message as (role, blocks); bookkeeping messages (a person's answer to an action, which
    its tool result already tells) give none."""
    use_ids = {
        p.tool_call_id: tool_use_id(p) for m in conversation for p in m.content if isinstance(p, ToolCallPart)
    }
    for message in conversation:
        if message.role == "ai":
            yield "assistant", [_assistant_block(p) for p in message.content if _said(p)]
        elif message.role == "tool":
            yield (
                "user",
                [
                    _result_block(p, use_ids.get(p.tool_call_id, p.tool_call_id))
                    for p in message.content
                    if isinstance(p, ToolResultPart)
                ],
            )
        elif message.type == "message":
            yield "user", [{"text": p.text} for p in message.content if isinstance(p, TextPart) and p.text]


def _merged(turns: Iterable[tuple[str, list[Block]]]) -> list[Turn]:
    """Consecutive turns of one role as one; empty turns dropped."""
    merged: list[Turn] = []
    for role, blocks in turns:
        if not blocks:
            continue
        if merged and merged[-1]["role"] == role:
            merged[-1]["content"].extend(blocks)
        else:
            merged.append({"role": role, "content": list(blocks)})
    return merged


def _without_orphan_results(turns: list[Turn]) -> list[Turn]:
    """Drop each toolResult whose toolUse is not in the assistant turn right before it (a window left its
    call out): Converse refuses one. Turns it empties go, and those left of one role merge."""
    kept: list[tuple[str, list[Block]]] = []
    asked: set[str] = set()
    for turn in turns:
        blocks = turn["content"]
        if turn["role"] == "user":
            blocks = [b for b in blocks if "toolResult" not in b or b["toolResult"]["toolUseId"] in asked]
        asked = {b["toolUse"]["toolUseId"] for b in blocks if "toolUse" in b}
        kept.append((turn["role"], blocks))
    return _merged(kept)


def _answer_every_call(turns: list[Turn]) -> list[Turn]:
    """Give each toolUse its toolResult in the next user turn (Converse refuses a conversation without)."""
    answered: list[Turn] = []
    for i, turn in enumerate(turns):
        answered.append(turn)
        if turn["role"] != "assistant":
            continue
        asked = [b["toolUse"]["toolUseId"] for b in turn["content"] if "toolUse" in b]
        following = turns[i + 1] if i + 1 < len(turns) and turns[i + 1]["role"] == "user" else None
        given = {
            b["toolResult"]["toolUseId"]
            for b in (following or {"content": []})["content"]
            if "toolResult" in b
        }
        missing = [
            {"toolResult": {"toolUseId": u, "content": [{"text": UNANSWERED}], "status": "error"}}
            for u in asked
            if u not in given
        ]
        if missing and following is not None:
            following["content"][:0] = missing
        elif missing:
            answered.append({"role": "user", "content": missing})
    # results first in a user turn, then what the person said (as Converse's examples order them)
    for turn in answered:
        if turn["role"] == "user":
            turn["content"].sort(key=lambda b: "toolResult" not in b)
    return answered


def _opens_a_window(turn: Turn) -> bool:
    return turn["role"] == "user" and not any("toolResult" in b for b in turn["content"])


def _windowed(turns: list[Turn], window: ConversationWindow) -> list[Turn]:
    """The most recent turns within the window, starting at a person's message (never between a toolUse
    and its toolResult). The latest such start is kept even when it alone is over the budget."""
    openings = [i for i, turn in enumerate(turns) if _opens_a_window(turn)]
    start = openings[-1] if openings else 0
    chars = sum(len(json.dumps(t["content"], ensure_ascii=False)) for t in turns[start:])
    for i in reversed(openings[:-1]):
        chars += sum(len(json.dumps(t["content"], ensure_ascii=False)) for t in turns[i:start])
        if len(turns) - i > window.max_messages or chars > window.max_chars:
            break
        start = i
    return turns[start:]


def converse_messages(
    conversation: Sequence[NewMessage], window: ConversationWindow = DEFAULT_WINDOW
) -> list[Turn]:
    return _windowed(_answer_every_call(_without_orphan_results(_merged(_turns(conversation)))), window)


def tool_config(tools: Sequence[Tool]) -> dict[str, Any] | None:
    """The agent's tools as Converse's toolConfig (None when it has none: Converse refuses an empty list)."""
    if not tools:
        return None
    return {
        "tools": [
            {
                "toolSpec": {
                    "name": converse_name(t.name),
                    "description": t.description or t.name,
                    "inputSchema": {"json": t.json_schema()},
                }
            }
            for t in tools
        ]
    }

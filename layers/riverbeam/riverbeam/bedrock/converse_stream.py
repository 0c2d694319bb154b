"""One ConverseStream response read into a turn: text as it arrives, tool calls from their JSON fragments,
the stop reason and the token usage (the events as the ConverseStream API documents them)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from beam_store.records import TokenUsage

from ..agent.llm import ToolCall
from ..errors import BeamError


# plain classes, not data classes: one costs every cold start a millisecond or more to make
class _ToolUse:
    def __init__(self, tool_use_id: str, name: str) -> None:
        self.tool_use_id = tool_use_id
        self.name = name
        self.fragments: list[str] = []

    def call(self) -> ToolCall:
        text = "".join(self.fragments)
        try:
            args = json.loads(text) if text.strip() else {}
        except (ValueError, RecursionError):
            raise BeamError("BEM-343", f"the model's input for {self.name} is not JSON") from None
        if not isinstance(args, dict):
            raise BeamError("BEM-343", f"the model's input for {self.name} is not a JSON object")
        return ToolCall(name=self.name, args=args, model_call_id=self.tool_use_id)


class StreamedTurn:
    """What one response said; `on_text` gets the text deltas, minus the first `skip` characters (those a
    failed attempt already streamed to the client)."""

    def __init__(self, on_text: Callable[[str], None], skip: int = 0) -> None:
        self.on_text = on_text
        self.skip = skip
        self.text: list[str] = []
        self.uses: dict[int, _ToolUse] = {}
        self.stop_reason: str | None = None
        self.usage: TokenUsage | None = None

    @property
    def streamed(self) -> int:
        return sum(len(t) for t in self.text)

    def read(self, events: Iterable[dict[str, Any]]) -> None:
        for event in events:
            if "contentBlockStart" in event:
                self._start(event["contentBlockStart"])
            elif "contentBlockDelta" in event:
                self._delta(event["contentBlockDelta"])
            elif "messageStop" in event:
                self.stop_reason = event["messageStop"].get("stopReason")
            elif "metadata" in event:
                self.usage = _usage(event["metadata"].get("usage") or {})

    def _start(self, start: dict[str, Any]) -> None:
        tool_use = start.get("start", {}).get("toolUse")
        if tool_use is not None:
            index = start.get("contentBlockIndex", len(self.uses))
            self.uses[index] = _ToolUse(tool_use["toolUseId"], tool_use["name"])

    def _delta(self, delta_event: dict[str, Any]) -> None:
        delta = delta_event.get("delta", {})
        if "text" in delta:
            self._say(delta["text"])
        elif "toolUse" in delta:
            use = self.uses.get(delta_event.get("contentBlockIndex", -1))
            if use is None:
                raise BeamError("BEM-343", "the model sent tool input for no tool call")
            use.fragments.append(delta["toolUse"].get("input", ""))

    def _say(self, text: str) -> None:
        before = self.streamed
        self.text.append(text)
        fresh = text[max(0, self.skip - before) :]
        if fresh:
            self.on_text(fresh)

    def calls(self) -> list[ToolCall]:
        return [self.uses[i].call() for i in sorted(self.uses)]


def _usage(usage: dict[str, Any]) -> TokenUsage:
    return TokenUsage(
        input_tokens=usage.get("inputTokens", 0),
        output_tokens=usage.get("outputTokens", 0),
        cache_read_tokens=usage.get("cacheReadInputTokens", 0),
        cache_write_tokens=usage.get("cacheWriteInputTokens", 0),
    )

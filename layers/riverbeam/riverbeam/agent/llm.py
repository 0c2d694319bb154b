"""Models behind ToolAgentRunner: the interface, the scripted offline model and the built-in author model."""

# no `from __future__ import annotations`: pydantic would compile and evaluate every field's annotation
# string as each model class is made
import re
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from beam_store.records import ActionResponsePart, TextPart, TokenUsage, ToolCallPart, ToolResultPart
from pydantic import BaseModel, ConfigDict, Field

from ..models import NewMessage
from ..tools import Tool

OnText = Callable[[str], None]


class ToolCall(BaseModel):
    """A call the model asks for; the runner gives it a fresh UUID, which becomes the action's id.
    `model_call_id` is the provider's own id of it (Bedrock's toolUseId), sent back with its result."""

    # built by the first model turn, not when the agents are registered (an invoke's or a resume's checks)
    model_config = ConfigDict(defer_build=True)

    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    model_call_id: str | None = None


class ModelTurn(BaseModel):
    model_config = ConfigDict(defer_build=True)

    text: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    usage: TokenUsage | None = None


class ChatModel(Protocol):
    def next_turn(
        self, conversation: Sequence[NewMessage], tools: Sequence[Tool], on_text: OnText
    ) -> ModelTurn:
        """The model's next turn for `conversation`; text is streamed through `on_text` as it comes."""
        ...


def stream_words(text: str, on_text: OnText) -> None:
    for chunk in re.findall(r"\S+\s*|\s+", text):
        on_text(chunk)


ScriptStep = ModelTurn | Callable[[Sequence[NewMessage]], ModelTurn]


# the provider's call id a scripted tool call carries: its turn's place in the script (N) and its own (k)
SCRIPT_MARK = re.compile(r"scripted:(\d+):\d+")


def script_position(conversation: Sequence[NewMessage]) -> int:
    """The number of ai turns before the next one: the last marked turn's N, plus 1 and the ai turns after
    it; in a conversation without a marked turn, its ai turns."""
    after = 0
    for message in reversed(conversation):
        if message.role != "ai":
            continue
        for part in message.content:
            marked = isinstance(part, ToolCallPart) and SCRIPT_MARK.fullmatch(part.model_call_id or "")
            if marked:
                return int(marked.group(1)) + 1 + after
        after += 1
    return after


class ScriptedModel:
    """An offline model that answers with turn N of its script, N read from the conversation it is given
    (not from a counter): its tool calls carry their turn's N (`scripted:N:k`, where a provider puts its own
    call id), so N is the last such turn's N + 1 plus the ai turns after it, or, without one, the ai turns
    in the conversation. So it picks the same turn whichever process the conversation is resumed in, and is
    given the runner's window of the session only, as other models are (a resume always follows one of its
    tool calls; a session longer than the window whose window holds none of them counts from the window).
    A step may be a function of the conversation, to answer what it was told (a refusal, a tool error)."""

    def __init__(self, turns: Sequence[ScriptStep]) -> None:
        self.turns = list(turns)
        self.conversations: list[list[NewMessage]] = []

    def next_turn(
        self, conversation: Sequence[NewMessage], tools: Sequence[Tool], on_text: OnText
    ) -> ModelTurn:
        self.conversations.append([m.model_copy(deep=True) for m in conversation])
        index = script_position(conversation)
        if index >= len(self.turns):
            raise RuntimeError(
                f"ScriptedModel has {len(self.turns)} turns and was asked for turn {index + 1}"
            )
        step = self.turns[index]
        turn = step if isinstance(step, ModelTurn) else step(conversation)
        stream_words(turn.text, on_text)
        calls = [
            c.model_copy(update={"model_call_id": f"scripted:{index}:{k}"}) if c.model_call_id is None else c
            for k, c in enumerate(turn.tool_calls)
        ]
        return turn.model_copy(update={"tool_calls": calls}) if calls else turn


_PUSH = re.compile(r"\bpush\s+([A-Za-z0-9._/-]+)", re.IGNORECASE)


class AuthorOfflineModel:
    """The default `author` agent's model without a network: "push <ref>" asks to run git_push(ref);
    a tool result gets a sentence about it; anything else a short answer."""

    def next_turn(
        self, conversation: Sequence[NewMessage], tools: Sequence[Tool], on_text: OnText
    ) -> ModelTurn:
        turn = self._decide(conversation)
        stream_words(turn.text, on_text)
        return turn

    def _decide(self, conversation: Sequence[NewMessage]) -> ModelTurn:
        last = conversation[-1] if conversation else None
        if last is not None and last.role == "tool":
            result = next((p for p in last.content if isinstance(p, ToolResultPart)), None)
            if result is not None:
                return ModelTurn(text=_describe(result, conversation))
        if last is not None and last.role == "human" and last.type == "message":
            text = " ".join(p.text for p in last.content if isinstance(p, TextPart))
            match = _PUSH.search(text)
            if match:
                ref = match.group(1).rstrip(".")
                return ModelTurn(
                    text=f"I will push {ref} once you approve.",
                    tool_calls=[ToolCall(name="git_push", args={"ref": ref})],
                )
        return ModelTurn(text="I can push a branch for you: say 'push <branch>'.")


def _describe(result: ToolResultPart, conversation: Sequence[NewMessage]) -> str:
    args = next(
        (
            p.args
            for m in conversation
            for p in m.content
            if isinstance(p, ToolCallPart) and p.tool_call_id == result.tool_call_id
        ),
        {},
    )
    ref = (result.edited_args or args).get("ref", "the branch")
    if result.status == "ok":
        return f"Pushed {ref}." + (" (You edited the args before approving.)" if result.edited_args else "")
    if result.status == "refused":
        reason = next(
            (
                p.reason
                for m in conversation
                for p in m.content
                if isinstance(p, ActionResponsePart) and p.action_id == result.tool_call_id
            ),
            None,
        )
        return f"Understood: I did not push {ref}." + (f" Your reason: {reason}" if reason else "")
    reason = result.error.message if result.error else "unknown error"
    return f"The push of {ref} failed: {reason}"

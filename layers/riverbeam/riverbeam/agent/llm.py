"""Models behind ToolAgentRunner: the interface, the scripted offline model and the built-in author model."""

# no `from __future__ import annotations`: pydantic would compile and evaluate every field's annotation
# string as each model class is made
import json
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
_CALL = re.compile(r"^\s*call\s+(\S+)\s*(.*)$", re.IGNORECASE | re.DOTALL)


class AuthorOfflineModel:
    """The default `author` agent's model without a network: "push <ref>" asks to run git_push(ref);
    "call <tool> <args JSON>" asks to run any tool the agent has with those args (to try a tool of your own
    before you have a model); a tool result gets a sentence about it; anything else a short answer."""

    def next_turn(
        self, conversation: Sequence[NewMessage], tools: Sequence[Tool], on_text: OnText
    ) -> ModelTurn:
        turn = self._decide(conversation, tools)
        stream_words(turn.text, on_text)
        return turn

    def _decide(self, conversation: Sequence[NewMessage], tools: Sequence[Tool]) -> ModelTurn:
        last = conversation[-1] if conversation else None
        if last is not None and last.role == "tool":
            result = next((p for p in last.content if isinstance(p, ToolResultPart)), None)
            if result is not None:
                return ModelTurn(text=_describe(result, conversation))
        if last is not None and last.role == "human" and last.type == "message":
            text = " ".join(p.text for p in last.content if isinstance(p, TextPart))
            called = _CALL.match(text)
            if called:
                return _call_turn(called.group(1), called.group(2).strip(), tools)
            match = _PUSH.search(text)
            if match:
                ref = match.group(1).rstrip(".")
                return ModelTurn(
                    text=f"I will push {ref}.",
                    tool_calls=[ToolCall(name="git_push", args={"ref": ref})],
                )
        return ModelTurn(text=_fallback(tools))


def _fallback(tools: Sequence[Tool]) -> str:
    """The reply to anything else: what this agent's own tools let it do (not another agent's)."""
    names = sorted(t.name for t in tools)
    if "git_push" in names:
        return "I can push a branch for you: say 'push <branch>'."
    if names:
        return f"I run offline: say 'call <tool> <args JSON>' to call one of my tools ({', '.join(names)})."
    return "I run offline and have no tools: I can only answer this."


def _call_turn(name: str, said: str, tools: Sequence[Tool]) -> ModelTurn:
    """The turn for `call <tool> <args JSON>`: that call, or words saying why not."""
    names = sorted(t.name for t in tools)
    if name not in names:
        return ModelTurn(text=f"I have no tool {name}. My tools: {', '.join(names) or 'none'}.")
    try:
        args = json.loads(said) if said else {}
    except RecursionError:
        return ModelTurn(text=f"The args of {name} nest too deep to read.")
    except ValueError as error:
        return ModelTurn(text=f"The args of {name} must be a JSON object: {error}.")
    if not isinstance(args, dict):
        return ModelTurn(text=f"The args of {name} must be a JSON object, not {type(args).__name__}.")
    return ModelTurn(text=f"I will call {name}.", tool_calls=[ToolCall(name=name, args=args)])


def _describe(result: ToolResultPart, conversation: Sequence[NewMessage]) -> str:
    call = next(
        (
            p
            for m in conversation
            for p in m.content
            if isinstance(p, ToolCallPart) and p.tool_call_id == result.tool_call_id
        ),
        None,
    )
    if call is not None and call.name != "git_push":
        return _describe_call(call.name, result)
    args = call.args if call is not None else {}
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


def _describe_call(name: str, result: ToolResultPart) -> str:
    if result.status == "ok":
        said = json.dumps(result.output, ensure_ascii=False, default=str)
        return f"{name} answered: {said[:500]}" + ("..." if len(said) > 500 else "")
    if result.status == "refused":
        return f"Understood: I did not call {name}."
    return f"{name} failed: {result.error.message if result.error else 'unknown error'}"

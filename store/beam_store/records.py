"""The execution records (Session > Interaction > Run > Message, Action) as stored and as served."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

InteractionStatus = Literal["in_progress", "completed", "failed"]
RunStatus = Literal["running", "completed", "failed", "interrupted"]
ActionStatus = Literal["pending", "resolved", "cancelled"]
MessageRole = Literal["human", "ai", "tool"]
MessageType = Literal["message", "action_result"]
ResponseStatus = Literal["submitted", "cancelled"]


def utc_now() -> str:
    """ISO-8601 UTC with microseconds, so timestamps sort as strings."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def new_id() -> str:
    return str(uuid.uuid4())


class WireModel(BaseModel):
    """A model that appears in JSON: unknown fields of stored items are ignored."""

    model_config = ConfigDict(extra="ignore")


class ErrorInfo(WireModel):
    code: str
    message: str


class TextPart(WireModel):
    type: Literal["text"] = "text"
    text: str


class ToolCallPart(WireModel):
    type: Literal["tool_call"] = "tool_call"
    tool_call_id: str
    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    # the model provider's own id of the call (Bedrock's toolUseId), sent back with its result
    model_call_id: str | None = None


class ToolResultPart(WireModel):
    type: Literal["tool_result"] = "tool_result"
    tool_call_id: str
    name: str
    status: Literal["ok", "error", "refused"]
    output: Any = None
    error: ErrorInfo | None = None


class ActionResponsePart(WireModel):
    type: Literal["action_response"] = "action_response"
    action_id: str
    status: ResponseStatus
    reason: str | None = None


ContentPart = Annotated[
    TextPart | ToolCallPart | ToolResultPart | ActionResponsePart, Field(discriminator="type")
]


class Session(WireModel):
    session_id: str
    user_id: str
    profile_id: str | None = None
    last_seq: int = 0
    last_active_at: str | None = None
    created_at: str
    updated_at: str


class Interaction(WireModel):
    interaction_id: str
    session_id: str
    agent_name: str
    status: InteractionStatus
    active_run_id: str | None = None
    created_at: str
    updated_at: str


class TokenUsage(WireModel):
    """Tokens a model call used, as the provider counts them."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            **{name: getattr(self, name) + getattr(other, name) for name in TokenUsage.model_fields}
        )


class Run(WireModel):
    run_id: str
    session_id: str
    interaction_id: str
    agent_name: str
    agent_id: str
    status: RunStatus
    error: ErrorInfo | None = None
    # the worker executing the run, and until when its claim holds (a worker that died lets it lapse)
    claimed_by: str | None = None
    lease_expires_at: str | None = None
    created_at: str
    updated_at: str
    ended_at: str | None = None
    # the tokens the run's model calls used, where the model counts them
    usage: TokenUsage | None = None


class Message(WireModel):
    message_id: str
    session_id: str
    interaction_id: str
    run_id: str
    seq: int
    role: MessageRole
    type: MessageType = "message"
    content: list[ContentPart]
    created_at: str
    updated_at: str


class ActionResponseRecord(WireModel):
    """The response that resolved an action: what was answered, by whom, when."""

    status: ResponseStatus
    request_id: str
    who: str
    when: str
    reason: str | None = None


class ToolOutcome(WireModel):
    status: Literal["ok", "error"]
    output: Any = None
    error: ErrorInfo | None = None


class Action(WireModel):
    action_id: str
    session_id: str
    interaction_id: str
    run_id: str
    user_id: str
    agent_name: str
    kind: Literal["confirmation"] = "confirmation"
    tool: str
    args: dict[str, Any] = Field(default_factory=dict)
    status: ActionStatus
    response: ActionResponseRecord | None = None
    resolved_run_id: str | None = None
    outcome: ToolOutcome | None = None
    created_at: str
    updated_at: str


class Connection(WireModel):
    """A WebSocket connection subscribed to a session's frames until it closes or `expires_at` (epoch s)."""

    connection_id: str
    session_id: str
    user_id: str
    connected_at: str
    expires_at: int

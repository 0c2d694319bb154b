"""Riverbeam's record store: the BeamStore protocol, InMemoryStore and DynamoBeamStore."""

from typing import TYPE_CHECKING, Any

from .dynamo import DynamoBeamStore, ensure_table
from .outbox import OutboxEvent
from .protocol import BeamStore
from .records import (
    Action,
    ActionResponsePart,
    ActionResponseRecord,
    Connection,
    ContentPart,
    ErrorInfo,
    Grant,
    Interaction,
    Message,
    RequestRecord,
    Run,
    Session,
    TextPart,
    TokenUsage,
    ToolCallPart,
    ToolOutcome,
    ToolResultPart,
    args_sha256,
    canonical_args,
    canonical_json,
    new_id,
    utc_now,
)
from .step_write import MessageDraft, StepWrite
from .store_errors import (
    ActionConflict,
    ContentTooLarge,
    InteractionBusy,
    InteractionInOtherSession,
    InteractionMissing,
    RecordExists,
    RunClaimed,
    RunNotRunning,
    SessionMissing,
    SessionOwnedByOther,
    StoreBusy,
    StoreConflict,
)

if TYPE_CHECKING:
    from .memory import InMemoryStore


def __getattr__(name: str) -> Any:
    """InMemoryStore on first use: a deployment (DynamoBeamStore) never imports it."""
    if name == "InMemoryStore":
        from .memory import InMemoryStore

        return InMemoryStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "Action",
    "ActionConflict",
    "ActionResponsePart",
    "ActionResponseRecord",
    "BeamStore",
    "Connection",
    "ContentPart",
    "ContentTooLarge",
    "DynamoBeamStore",
    "ErrorInfo",
    "Grant",
    "InMemoryStore",
    "Interaction",
    "InteractionBusy",
    "InteractionInOtherSession",
    "InteractionMissing",
    "Message",
    "MessageDraft",
    "OutboxEvent",
    "RecordExists",
    "RequestRecord",
    "Run",
    "RunClaimed",
    "RunNotRunning",
    "Session",
    "SessionMissing",
    "SessionOwnedByOther",
    "StepWrite",
    "StoreBusy",
    "StoreConflict",
    "TextPart",
    "TokenUsage",
    "ToolCallPart",
    "ToolOutcome",
    "ToolResultPart",
    "args_sha256",
    "canonical_args",
    "canonical_json",
    "ensure_table",
    "new_id",
    "utc_now",
]

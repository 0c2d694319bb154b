"""Riverbeam's record store: the BeamStore protocol, InMemoryStore and DynamoBeamStore."""

from .dynamo import DynamoBeamStore, ensure_table
from .errors import (
    ActionConflict,
    InteractionBusy,
    InteractionInOtherSession,
    InteractionMissing,
    RecordExists,
    RunNotRunning,
    SessionMissing,
    SessionOwnedByOther,
    StoreBusy,
    StoreConflict,
)
from .memory import InMemoryStore
from .protocol import BeamStore
from .records import (
    Action,
    ActionResponsePart,
    ActionResponseRecord,
    ContentPart,
    ErrorInfo,
    Interaction,
    Message,
    Run,
    Session,
    TextPart,
    ToolCallPart,
    ToolOutcome,
    ToolResultPart,
    new_id,
    utc_now,
)
from .step import MessageDraft, StepWrite

__all__ = [
    "Action",
    "ActionConflict",
    "ActionResponsePart",
    "ActionResponseRecord",
    "BeamStore",
    "ContentPart",
    "DynamoBeamStore",
    "ErrorInfo",
    "InMemoryStore",
    "Interaction",
    "InteractionBusy",
    "InteractionInOtherSession",
    "InteractionMissing",
    "Message",
    "MessageDraft",
    "RecordExists",
    "Run",
    "RunNotRunning",
    "Session",
    "SessionMissing",
    "SessionOwnedByOther",
    "StepWrite",
    "StoreBusy",
    "StoreConflict",
    "TextPart",
    "ToolCallPart",
    "ToolOutcome",
    "ToolResultPart",
    "ensure_table",
    "new_id",
    "utc_now",
]

"""The outbox: events that a write publishes, kept in that write itself. A step (or an expiry) that commits
has its events stored with it, one that is refused has none; whoever publishes them reads them afterwards
(a DynamoDB table's stream; in process, the caller that committed). The store knows an event as opaque
data: its id, its source, its detail type and its JSON detail."""

from __future__ import annotations

from typing import Any, NamedTuple

# how long an outbox item is kept (DynamoDB TTL): long enough for a publisher that is down for days to
# catch up, short enough that they do not pile up
OUTBOX_TTL_SECONDS = 7 * 24 * 3600


# a NamedTuple, not a frozen dataclass: one costs every cold start a millisecond or more to make
class OutboxEvent(NamedTuple):
    """One event to publish. `event_id` is stable: the same event has it on every delivery."""

    event_id: str
    source: str
    detail_type: str
    detail: dict[str, Any]

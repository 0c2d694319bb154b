"""The outbox's items: a write's events (beam_store.outbox), put in the write's own transaction.

    OUTBOX#<id of its first event> / OUTBOX    entity `outbox`; `events`: the events as compact JSON,
                                               [{"id", "source", "detail_type", "detail"}, ...];
                                               `expires_at`: the table's TTL (OUTBOX_TTL_SECONDS)

A write's events share items, as many as fit under OUTBOX_ITEM_BYTES each (one, but for a resume answering
many actions with large args): a step's transaction grows by an item or two, not by one per event, and
stays under DynamoDB's 100 items. An event's id is unique, so the key of the item that holds it first is
too. Nothing reads them back but the table's stream (NEW_IMAGE): its consumer publishes the events of
each item inserted (events_of), and the TTL deletes them later.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from ..outbox import OUTBOX_TTL_SECONDS, OutboxEvent
from .items import TTL_ATTRIBUTE

Item = dict[str, Any]
OUTBOX_ENTITY = "outbox"
# a write's events go in items of at most this many bytes of JSON (one event larger than it, none in
# practice, alone): far under DynamoDB's 400 KB an item, and a stream record Lambda hands on whole
OUTBOX_ITEM_BYTES = 128 * 1024


def _encoded(event: OutboxEvent) -> str:
    wire = {"id": event.event_id, "source": event.source, "detail_type": event.detail_type}
    return json.dumps(wire | {"detail": event.detail}, ensure_ascii=False, separators=(",", ":"))


def _chunks(events: Sequence[OutboxEvent]) -> list[list[tuple[str, str]]]:
    """The events as (id, JSON) in order, in chunks of at most OUTBOX_ITEM_BYTES."""
    chunks: list[list[tuple[str, str]]] = []
    size = 0
    for event in events:
        encoded = _encoded(event)
        grown = size + len(encoded.encode()) + 1
        if not chunks or grown > OUTBOX_ITEM_BYTES:
            chunks.append([])
            grown = len(encoded.encode()) + 1
        chunks[-1].append((event.event_id, encoded))
        size = grown
    return chunks


def outbox_items(events: Sequence[OutboxEvent], now: float | None = None) -> list[Item]:
    """The items that hold `events` (none for none), kept OUTBOX_TTL_SECONDS from `now` (epoch s)."""
    expires_at = int((time.time() if now is None else now) + OUTBOX_TTL_SECONDS)
    return [
        {
            "pk": {"S": f"OUTBOX#{chunk[0][0]}"},
            "sk": {"S": "OUTBOX"},
            "entity": {"S": OUTBOX_ENTITY},
            "events": {"S": "[" + ",".join(encoded for _, encoded in chunk) + "]"},
            TTL_ATTRIBUTE: {"N": str(expires_at)},
        }
        for chunk in _chunks(events)
    ]


def is_outbox(image: Item) -> bool:
    """Whether a stored item (attribute values, as a stream record's NewImage holds it) is an outbox item."""
    return (image.get("entity") or {}).get("S") == OUTBOX_ENTITY


def events_of(image: Item) -> list[OutboxEvent]:
    """The events an outbox item holds, in order. Raises ValueError for an item that is not one, or whose
    events cannot be read."""
    if not is_outbox(image):
        raise ValueError("not an outbox item")
    try:
        stored = json.loads(image["events"]["S"])
        return [
            OutboxEvent(str(e["id"]), str(e["source"]), str(e["detail_type"]), dict(e["detail"]))
            for e in stored
        ]
    except (KeyError, TypeError, ValueError) as error:
        raise ValueError(f"the outbox item's events cannot be read: {type(error).__name__}") from None

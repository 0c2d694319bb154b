"""The approval events' way out of a deployment: PutEvents on an EventBridge bus (EVENT_BUS_NAME), at most
ten entries and REQUEST_BYTES a call. The events come from the outbox (outbox.py); an entry EventBridge
refuses (FailedEntryCount) fails the put, so that what carried it is delivered again."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from beam_store import OutboxEvent

if TYPE_CHECKING:
    from mypy_boto3_events.client import EventBridgeClient

# PutEvents takes at most ten entries a call, and 256 KB of them in all (AWS's entry size: Source,
# DetailType, Detail, Resources and Time in UTF-8); a margin under it
ENTRIES_PER_CALL = 10
REQUEST_BYTES = 240 * 1024


class PutRefused(Exception):
    """EventBridge refused entries of a put: `refused` holds each one's event id and error code."""

    def __init__(self, refused: list[tuple[str, str]]) -> None:
        self.refused = refused
        codes = sorted({code for _, code in refused})
        super().__init__(f"{len(refused)} event(s) refused: {', '.join(codes)}")


def entry(event: OutboxEvent, bus_name: str) -> dict[str, Any]:
    """The PutEvents entry of an event (its id is in its detail, as `id`)."""
    return {
        "EventBusName": bus_name,
        "Source": event.source,
        "DetailType": event.detail_type,
        "Detail": json.dumps(event.detail, ensure_ascii=False, separators=(",", ":")),
    }


def entry_size(sent: dict[str, Any]) -> int:
    """An entry's size as EventBridge counts it ('Calculating PutEvents event entry size')."""
    size = sum(len(sent[k].encode()) for k in ("Source", "DetailType", "Detail") if k in sent)
    size += sum(len(r.encode()) for r in sent.get("Resources", []))
    return size + (14 if "Time" in sent else 0)


def chunks(entries: Sequence[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The entries in order, in PutEvents calls of at most ENTRIES_PER_CALL entries and REQUEST_BYTES
    (an entry bigger than that alone goes in a call of its own: EventBridge refuses it, and says so)."""
    calls: list[list[dict[str, Any]]] = []
    size = 0
    for sent in entries:
        grown = size + entry_size(sent)
        if not calls or len(calls[-1]) == ENTRIES_PER_CALL or grown > REQUEST_BYTES:
            calls.append([])
            grown = entry_size(sent)
        calls[-1].append(sent)
        size = grown
    return calls


def put(client: EventBridgeClient, bus_name: str, events: Sequence[OutboxEvent]) -> int:
    """Put every event on the bus; returns how many were put. Raises PutRefused, after putting the rest,
    where EventBridge refused entries; a call that fails raises its error."""
    refused: list[tuple[str, str]] = []
    put_count = 0
    for chunk in chunks([entry(e, bus_name) for e in events]):
        answer = client.put_events(Entries=chunk)  # type: ignore[arg-type]
        results = answer.get("Entries", [])
        here = [
            (_event_id(sent), str(result["ErrorCode"]))
            for sent, result in zip(chunk, results, strict=False)
            if "ErrorCode" in result
        ]
        if answer.get("FailedEntryCount") and not here:  # counted, but no entry says which: all again
            here = [(_event_id(sent), "Unknown") for sent in chunk]
        refused += here
        put_count += len(chunk) - len(here)
    if refused:
        raise PutRefused(refused)
    return put_count


def _event_id(sent: dict[str, Any]) -> str:
    return str(json.loads(sent["Detail"]).get("id"))

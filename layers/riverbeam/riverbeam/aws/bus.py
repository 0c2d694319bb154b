"""The approval events' way out of a deployment: an EventBridge bus (EVENT_BUS_NAME). The pipeline hands
its events to a sink (pipeline/events.py); this one puts them on the bus, at most ten entries and
REQUEST_BYTES a PutEvents call, with the `events` client created on first use (no handler pays for it
at import). A put that fails, or an entry EventBridge refuses, is logged and dropped: at most once,
never failing the step."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from typing import Any

from ..pipeline.events import ApprovalEvent

logger = logging.getLogger(__name__)
# PutEvents takes at most ten entries a call, and 256 KB of them in all (AWS's entry size: Source,
# DetailType, Detail, Resources and Time in UTF-8); a margin under it
ENTRIES_PER_CALL = 10
REQUEST_BYTES = 240 * 1024


def entry(event: ApprovalEvent, bus_name: str) -> dict[str, Any]:
    """The PutEvents entry of an event."""
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


class EventBridgeSink:
    def __init__(self, bus_name: str, client: Callable[[], Any]) -> None:
        self.bus_name = bus_name
        self._client = client  # a factory: the client is made by the first put
        self.put = 0
        self.failed = 0

    def __call__(self, events: Sequence[ApprovalEvent]) -> None:
        for chunk in chunks([entry(e, self.bus_name) for e in events]):
            try:
                answer = self._client().put_events(Entries=chunk)
            except Exception:
                self.failed += len(chunk)
                logger.exception("approval events were not put", extra={"bus": self.bus_name})
                continue
            for sent, result in zip(chunk, answer.get("Entries", []), strict=False):
                if "ErrorCode" in result:
                    self.failed += 1
                    logger.warning(
                        "an approval event was refused",
                        extra={
                            "bus": self.bus_name,
                            "detail_type": sent["DetailType"],
                            "error_code": result.get("ErrorCode"),
                            "error_message": result.get("ErrorMessage"),
                        },
                    )
                else:
                    self.put += 1

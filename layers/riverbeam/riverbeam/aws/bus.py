"""The approval events' way out of a deployment: an EventBridge bus (EVENT_BUS_NAME). The pipeline hands
its events to a sink (pipeline/events.py); this one puts them on the bus, ten entries a PutEvents call,
with the `events` client created on first use (no handler pays for it at import). A put that fails, or
an entry EventBridge refuses, is logged and dropped: at most once, never failing the step."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from typing import Any

from ..pipeline.events import ApprovalEvent

logger = logging.getLogger(__name__)
# PutEvents takes at most ten entries a call
ENTRIES_PER_CALL = 10


def entry(event: ApprovalEvent, bus_name: str) -> dict[str, Any]:
    """The PutEvents entry of an event."""
    return {
        "EventBusName": bus_name,
        "Source": event.source,
        "DetailType": event.detail_type,
        "Detail": json.dumps(event.detail, ensure_ascii=False, separators=(",", ":")),
    }


class EventBridgeSink:
    def __init__(self, bus_name: str, client: Callable[[], Any]) -> None:
        self.bus_name = bus_name
        self._client = client  # a factory: the client is made by the first put
        self.put = 0
        self.failed = 0

    def __call__(self, events: Sequence[ApprovalEvent]) -> None:
        entries = [entry(e, self.bus_name) for e in events]
        for start in range(0, len(entries), ENTRIES_PER_CALL):
            chunk = entries[start : start + ENTRIES_PER_CALL]
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

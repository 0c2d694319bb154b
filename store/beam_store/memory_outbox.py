"""InMemoryStore's outbox: the events of the writes it committed, kept as a table's stream would."""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Sequence

from .outbox import OUTBOX_TTL_SECONDS, OutboxEvent


class OutboxInMemory:
    """Mixed into InMemoryStore, whose lock and outbox it uses."""

    _lock: threading.Lock
    _outbox: deque[tuple[float, str]]

    def _keep_events(self, events: Sequence[OutboxEvent]) -> None:
        """Under the lock: keep a write's events, and forget those past their time (the table's TTL)."""
        now = time.time()
        while self._outbox and self._outbox[0][0] <= now:
            self._outbox.popleft()
        self._outbox.extend((now + OUTBOX_TTL_SECONDS, json.dumps(e)) for e in events)

    def outbox(self) -> list[OutboxEvent]:
        """The events of every write committed (and not past OUTBOX_TTL_SECONDS), in the order they were
        committed: what a DynamoDB table's stream of its outbox items is to DynamoBeamStore (tests)."""
        now = time.time()
        with self._lock:
            return [OutboxEvent(*json.loads(e)) for at, e in self._outbox if at > now]

"""How DynamoBeamStore waits before it sends again a write that lost to other writers, or that DynamoDB
left unprocessed."""

from __future__ import annotations

import random
import time
from typing import Any, NamedTuple

from ..store_errors import StoreBusy

# bounds for a step that keeps losing to other writers of its session (optimistic seq allocation)
MAX_ATTEMPTS = 400
MAX_SECONDS = 30.0
BACKOFF_CAP_SECONDS = 0.1
MAX_BATCH_ATTEMPTS = 8


class Backoff(NamedTuple):
    """How long to wait before attempt `n + 1`: a random time up to `base * 2**n`, never over `cap` (full
    jitter, so writers that lost to the same winner spread out). A NamedTuple: made at import, cheaper
    than a frozen dataclass, and only its `wait` is used."""

    base: float
    cap: float

    def wait(self, attempt: int) -> None:
        time.sleep(random.uniform(0, min(self.cap, self.base * 2 ** min(attempt, 30))))


# a step that lost its session's counter retries at once, nearly; unprocessed frames wait for capacity
STEP_BACKOFF = Backoff(base=0.002, cap=BACKOFF_CAP_SECONDS)
BATCH_BACKOFF = Backoff(base=0.05, cap=1.0)


def batch_put(client: Any, table_name: str, items: list[dict[str, Any]], what: str) -> None:
    """Put `items` 25 to a BatchWriteItem, sending again what DynamoDB leaves unprocessed (StoreBusy when
    some is left `MAX_BATCH_ATTEMPTS` times)."""
    requests = [{"PutRequest": {"Item": item}} for item in items]
    for start in range(0, len(requests), 25):
        pending: Any = {table_name: requests[start : start + 25]}
        for attempt in range(MAX_BATCH_ATTEMPTS):
            pending = client.batch_write_item(RequestItems=pending).get("UnprocessedItems") or {}
            if not pending:
                break
            BATCH_BACKOFF.wait(attempt)
        else:
            raise StoreBusy(f"{what} were left unprocessed {MAX_BATCH_ATTEMPTS} times")

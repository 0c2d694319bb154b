"""The event source mapping of the events function: the table's DynamoDB stream read as Lambda reads it
(GetRecords on each shard, in order), its records matched against the template's FilterCriteria and handed
to the function in batches shaped as Lambda hands them. A batch whose records fail (batchItemFailures, or
the whole batch if the function fails) is sent again from its first failed record, as Lambda does, up to
the template's MaximumRetryAttempts; then its records are logged as the dead-letter queue's message would
name them, and the tail goes on. The events each record the function took carried are logged one a line:

    event Approval Requested action=<id> tool=git_push session=<id> id=evt_<id>_requested
    event Approval Decided action=<id> tool=git_push session=<id> decision=submitted by=u1 edited=no ...
    event Approval Expired action=<id> tool=git_push session=<id> by=sweep ...

The stream is read from its end when the tail starts (the snapshot's items, restored into the new table,
are in the stream too, and were published before); a stop reads it once more, so what was written before
the stop is published. The embedded stream lives in memory: a stack killed (not stopped) between a write
and its publication does not publish that write's events after a restart.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from beam_store import OutboxEvent
from beam_store.dynamo.outbox_items import events_of

from ..lambda_like import matches, stream_record

log = logging.getLogger("riverbeam_local")
# GetRecords when nothing woke the tail (a write to the embedded table wakes it at once: `wake`)
IDLE_SECONDS = 1.0
# a failed batch is sent again after this, doubled each time up to the last
RETRY_SECONDS = (0.1, 0.2, 0.5, 1.0, 2.0)

RunBatch = Callable[[dict[str, Any]], Any]


def _sequence(record: Mapping[str, Any]) -> str:
    return str(record["dynamodb"]["SequenceNumber"])


def _decision(detail: Mapping[str, Any]) -> str:
    edited = "yes" if detail.get("edited") else "no"
    return f" decision={detail.get('decision')} by={detail.get('decided_by')} edited={edited}"


def log_events(events: Sequence[OutboxEvent]) -> None:
    """The approval events, one line each (the module's comment shows them)."""
    for event in events:
        detail = event.detail
        extra = ""
        if event.detail_type == "Approval Decided":
            extra = _decision(detail)
        elif event.detail_type == "Approval Expired":
            extra = f" by={detail.get('expired_by')}"
        log.info(
            "event %s action=%s tool=%s session=%s%s id=%s",
            event.detail_type,
            detail.get("action_id"),
            detail.get("tool"),
            detail.get("session_id"),
            extra,
            event.event_id,
        )


class StreamTail:
    """Reads the stream `stream_arn` on a thread of its own and hands each batch of matching records to
    `run_batch`, until stopped."""

    def __init__(
        self,
        streams: Any,
        stream_arn: str,
        run_batch: RunBatch,
        *,
        pattern: Mapping[str, Any] | None,
        batch_size: int,
        max_retries: int,
        wake: threading.Event,
        log_taken: bool = True,
    ) -> None:
        self._streams = streams
        self._log_taken = log_taken  # the events once a line: the publisher's tail logs them, no other
        self._arn = stream_arn
        self._run_batch = run_batch
        self._pattern = pattern
        self._batch_size = batch_size
        self._max_retries = max_retries
        self.wake = wake
        self._stop = threading.Event()
        self._iterators: dict[str, str | None] = {}  # shard id -> its next iterator (None: it ended)
        self._thread = threading.Thread(target=self._run, name="stream-tail", daemon=True)

    def start(self) -> None:
        """From the stream's end: what is in it now is not handed on."""
        self._find_shards("LATEST")
        self._thread.start()

    def stop(self, timeout: float) -> None:
        """Stop after one more read of every shard (what was written before the stop is handed on)."""
        self._stop.set()
        self.wake.set()
        self._thread.join(timeout=timeout)

    def _find_shards(self, start: str) -> None:
        """Shards not read yet (all of them at the start; later, those that followed an ended one) from
        `start` (LATEST, TRIM_HORIZON)."""
        shards = self._streams.describe_stream(StreamArn=self._arn)["StreamDescription"].get("Shards", [])
        for shard in shards:
            shard_id = shard["ShardId"]
            if shard_id in self._iterators:
                continue
            if start == "LATEST" and shard.get("SequenceNumberRange", {}).get("EndingSequenceNumber"):
                self._iterators[shard_id] = None  # ended before the tail started: nothing new in it
                continue
            answer = self._streams.get_shard_iterator(
                StreamArn=self._arn, ShardId=shard_id, ShardIteratorType=start
            )
            self._iterators[shard_id] = answer.get("ShardIterator")

    def _run(self) -> None:
        while True:
            stopping = self._stop.is_set()
            try:
                read = self._read_all()
            except Exception as error:  # the store restarting, say: try again shortly
                log.warning("the table's stream could not be read: %s", error)
                read = 0
            if stopping:
                return
            if not read:
                self.wake.wait(IDLE_SECONDS)
                self.wake.clear()

    def _read_all(self) -> int:
        """One GetRecords of every open shard; returns how many records were read."""
        read = 0
        for shard_id, iterator in list(self._iterators.items()):
            if iterator is None:
                continue
            answer = self._streams.get_records(ShardIterator=iterator, Limit=self._batch_size)
            records = answer.get("Records", [])
            self._iterators[shard_id] = answer.get("NextShardIterator")
            read += len(records)
            batch = [stream_record(r, self._arn) for r in records]
            batch = [r for r in batch if self._pattern is None or matches(self._pattern, r)]
            if batch:
                self._deliver(batch)
            if self._iterators[shard_id] is None:  # the shard ended: its children follow it
                self._find_shards("TRIM_HORIZON")
        return read

    def _deliver(self, records: list[dict[str, Any]]) -> None:
        pending = records
        for attempt in range(self._max_retries + 1):
            failed = self._call(pending)
            if self._log_taken:
                _log_taken([r for r in pending if _sequence(r) not in failed])
            if not failed:
                return
            # Lambda goes on from the first failed record: those before it are done
            first = next((i for i, r in enumerate(pending) if _sequence(r) in failed), None)
            if first is None:  # names no record of the batch: nothing to send again
                return
            pending = pending[first:]
            if attempt < self._max_retries:
                self._stop.wait(RETRY_SECONDS[min(attempt, len(RETRY_SECONDS) - 1)])
        log.error(
            "outbox records not published after %d retries (a deployment's dead-letter queue names "
            "them): sequence numbers %s..%s",
            self._max_retries,
            _sequence(pending[0]),
            _sequence(pending[-1]),
        )

    def _call(self, records: list[dict[str, Any]]) -> set[str]:
        """The sequence numbers of the records that failed (all of them where the function failed)."""
        started = time.monotonic()
        try:
            answer = self._run_batch({"Records": records})
            failures = (answer or {}).get("batchItemFailures") or []
            failed = {str(f["itemIdentifier"]) for f in failures}
        except Exception:
            log.exception("the stream's function failed; its batch is sent again")
            failed = {_sequence(r) for r in records}
        log.info(
            "DynamoDB stream events (%d done, %d failed) %d ms",
            len(records) - len(failed),
            len(failed),
            (time.monotonic() - started) * 1000,
        )
        return failed


def _log_taken(records: list[dict[str, Any]]) -> None:
    for record in records:
        try:
            log_events(events_of(record["dynamodb"].get("NewImage") or {}))
        except ValueError:
            continue  # not an outbox item (no filter): the function passed it over

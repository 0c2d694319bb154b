"""The event source mapping of the worker function: SQS batches from the job queue to the worker, the
succeeded messages deleted, the failed ones (batchItemFailures, or the whole batch if the function fails)
left to come back after the visibility timeout; SQS's redrive policy moves a message to the dead-letter
queue after maxReceiveCount receives."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from ..lambda_like import sqs_record

log = logging.getLogger("riverbeam_local")
# ReceiveMessage without long polling: the embedded server serves one request at a time, so a long poll
# would hold up every table request behind it. A sent message wakes the poller at once (`wake`).
IDLE_SECONDS = 1.0
MAX_BATCHES_IN_FLIGHT = 4

RunBatch = Callable[[dict[str, Any]], Any]


class Poller:
    def __init__(
        self,
        sqs: Any,
        queue_url: str,
        queue_arn: str,
        run_batch: RunBatch,
        *,
        wake: threading.Event,
        batch_size: int = 10,
    ) -> None:
        self._sqs = sqs
        self._url = queue_url
        self._arn = queue_arn
        self._run_batch = run_batch
        self._batch_size = batch_size
        self.wake = wake
        self._stop = threading.Event()
        self._slots = threading.BoundedSemaphore(MAX_BATCHES_IN_FLIGHT)
        self._batches: list[threading.Thread] = []
        self._thread = threading.Thread(target=self._poll, name="queue-poller", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float) -> bool:
        """Stop receiving and wait up to `timeout` s for the batches in flight; True if they all ended."""
        self._stop.set()
        self.wake.set()
        deadline = time.monotonic() + timeout
        self._thread.join(timeout=timeout)
        for batch in list(self._batches):
            batch.join(timeout=max(0.0, deadline - time.monotonic()))
        return not any(b.is_alive() for b in self._batches)

    def _poll(self) -> None:
        while not self._stop.is_set():
            if not self._slots.acquire(timeout=IDLE_SECONDS):
                continue
            try:
                messages = self._receive()
            except Exception as error:  # the store restarting, say: try again shortly
                log.warning("the job queue could not be read: %s", error)
                messages = []
            if not messages:
                self._slots.release()
                self.wake.wait(IDLE_SECONDS)
                self.wake.clear()
                continue
            batch = threading.Thread(target=self._deliver, args=(messages,), name="worker", daemon=True)
            self._batches = [b for b in self._batches if b.is_alive()] + [batch]
            batch.start()

    def _receive(self) -> list[dict[str, Any]]:
        answer = self._sqs.receive_message(
            QueueUrl=self._url,
            MaxNumberOfMessages=self._batch_size,
            AttributeNames=["All"],
            MessageAttributeNames=["All"],
            WaitTimeSeconds=0,
        )
        messages: list[dict[str, Any]] = answer.get("Messages", [])
        return messages

    def _deliver(self, messages: list[dict[str, Any]]) -> None:
        started = time.monotonic()
        records = [sqs_record(m, self._arn) for m in messages]
        try:
            try:
                answer = self._run_batch({"Records": records})
                failures = (answer or {}).get("batchItemFailures") or []
                failed = {str(f["itemIdentifier"]) for f in failures}
                status = 200
            except Exception:
                log.exception("the worker failed; its batch comes back after the visibility timeout")
                failed, status = {r["messageId"] for r in records}, 500
            done = [r for r in records if r["messageId"] not in failed]
            for r in done:
                self._sqs.delete_message(QueueUrl=self._url, ReceiptHandle=r["receiptHandle"])
            log.info(
                "SQS worker %d (%d done, %d failed) %d ms",
                status,
                len(done),
                len(failed),
                (time.monotonic() - started) * 1000,
            )
        except Exception:
            log.exception("a batch's messages could not be deleted")
        finally:
            self._slots.release()

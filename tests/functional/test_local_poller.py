"""riverbeam dev's queue poller as Lambda's event source mapping: SQS-shaped batches, succeeded messages
deleted, batchItemFailures delivered again, and after the template's maxReceiveCount the dead-letter
queue (the queue's redrive policy, with the template's settings but a visibility timeout of 2 s)."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws
from riverbeam_local.stack import services, template
from riverbeam_local.stack.queue_poller import Poller

from tests.support.stores import REGION

DEADLINE_SECONDS = 60.0


@pytest.fixture
def sqs() -> Iterator[Any]:
    with mock_aws():
        yield boto3.client("sqs", region_name=REGION)


def _count(sqs: Any, url: str) -> int:
    attrs = sqs.get_queue_attributes(
        QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
    )["Attributes"]
    return int(attrs["ApproximateNumberOfMessages"]) + int(attrs["ApproximateNumberOfMessagesNotVisible"])


def test_batches_failures_and_the_dead_letter_queue(sqs: Any) -> None:
    spec = template.load()
    immediate = dataclasses.replace(spec, queue=dataclasses.replace(spec.queue, visibility_timeout=2))
    queues = services.ensure_queues(sqs, "poller-test", immediate)
    batches: list[dict[str, Any]] = []

    def worker(event: dict[str, Any]) -> dict[str, Any]:
        batches.append(event)
        bad = [r["messageId"] for r in event["Records"] if r["body"] == "bad"]
        return {"batchItemFailures": [{"itemIdentifier": m} for m in bad]}

    for body, group in (("good", "s1"), ("bad", "s2")):
        sqs.send_message(QueueUrl=queues.url, MessageBody=body, MessageGroupId=group)
    poller = Poller(sqs, queues.url, queues.arn, worker, wake=threading.Event(), batch_size=10)
    poller.start()
    try:
        deadline = time.monotonic() + DEADLINE_SECONDS
        while _count(sqs, queues.dead_letter_url) == 0:
            assert time.monotonic() < deadline, f"nothing reached the dead-letter queue: {batches}"
            time.sleep(0.05)
    finally:
        assert poller.stop(timeout=DEADLINE_SECONDS)
    records = [r for b in batches for r in b["Records"]]
    good = [r for r in records if r["body"] == "good"]
    bad = [r for r in records if r["body"] == "bad"]
    assert len(good) == 1, "a succeeded message is deleted, never delivered again"
    assert len(bad) == spec.queue.max_receive_count
    assert [r["attributes"]["ApproximateReceiveCount"] for r in bad] == ["1", "2", "3"]
    first = good[0]
    assert first["eventSource"] == "aws:sqs" and first["eventSourceARN"] == queues.arn
    assert first["attributes"]["MessageGroupId"] == "s1" and first["attributes"]["MessageDeduplicationId"]
    assert _count(sqs, queues.url) == 0
    (dead,) = sqs.receive_message(QueueUrl=queues.dead_letter_url)["Messages"]
    assert dead["Body"] == "bad"

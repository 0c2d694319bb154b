"""riverbeam dev's tail of the table's stream as Lambda's event source mapping of the events function: from
the stream's end at its start, only the records the template's FilterCriteria lets through (outbox items
inserted), in DynamoDB-stream-shaped batches; a batch whose records fail is sent again from its first
failed record (the records before it are done), up to the template's MaximumRetryAttempts, then passed
over; a stop reads the stream once more."""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from beam_store import OutboxEvent
from beam_store.dynamo.outbox_items import events_of, outbox_items
from botocore.config import Config
from moto import mock_aws
from riverbeam_local.stack import services, table_stream, template

from tests.support.stores import REGION, serialized_moto

DEADLINE_SECONDS = 60.0


@pytest.fixture
def table() -> Iterator[tuple[Any, str, Any]]:
    """The template's table on moto, its stream, and a client of it (moto serves the regional endpoint)."""
    with mock_aws(), serialized_moto():
        dynamodb = boto3.client("dynamodb", region_name=REGION)
        name = f"tail-{uuid.uuid4().hex[:8]}"
        services.ensure_table(dynamodb, name, template.load())
        arn = services.stream_arn(dynamodb, name)
        assert arn is not None
        config = Config(account_id_endpoint_mode="disabled")
        yield dynamodb, name, (boto3.client("dynamodbstreams", region_name=REGION, config=config), arn)


def _put_events(dynamodb: Any, name: str, *tags: str) -> None:
    """One outbox item per tag, as a write would keep one event."""
    for tag in tags:
        event = OutboxEvent(f"evt_{tag}", "riverbeam", "Approval Requested", {"id": f"evt_{tag}", "tag": tag})
        (item,) = outbox_items([event])
        dynamodb.put_item(TableName=name, Item=item)


def _tags(event: dict[str, Any]) -> list[str]:
    return [e.detail["tag"] for r in event["Records"] for e in events_of(r["dynamodb"]["NewImage"])]


class Gated:
    """The streams client, whose GetRecords waits for `open` (the records a test writes are then read
    together, in one batch)."""

    def __init__(self, streams: Any) -> None:
        self._streams = streams
        self.open = threading.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._streams, name)

    def get_records(self, **params: Any) -> Any:
        assert self.open.wait(DEADLINE_SECONDS)
        return self._streams.get_records(**params)


def _wait(done: Any, what: str) -> None:
    deadline = time.monotonic() + DEADLINE_SECONDS
    while not done():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def test_outbox_items_written_after_the_start_in_lambdas_shape_and_nothing_else(
    table: tuple[Any, str, Any],
) -> None:
    dynamodb, name, (streams, arn) = table
    _put_events(dynamodb, name, "before")  # in the stream before the tail starts: published before
    batches: list[dict[str, Any]] = []
    source = template.load().stream_consumer
    assert source is not None
    tail = table_stream.StreamTail(
        streams,
        arn,
        lambda event: batches.append(event) or {"batchItemFailures": []},
        pattern=source.pattern,
        batch_size=source.batch_size,
        max_retries=source.max_retries,
        wake=threading.Event(),
    )
    tail.start()
    try:
        dynamodb.put_item(TableName=name, Item={"pk": {"S": "SESSION#s"}, "sk": {"S": "SESSION"}})
        _put_events(dynamodb, name, "a", "b")
        # a change to an outbox item is not an insert: filtered out
        dynamodb.update_item(
            TableName=name,
            Key={"pk": {"S": "OUTBOX#evt_a"}, "sk": {"S": "OUTBOX"}},
            UpdateExpression="SET touched = :t",
            ExpressionAttributeValues={":t": {"BOOL": True}},
        )
        _wait(lambda: sum(len(_tags(b)) for b in batches) >= 2, f"not handed on: {batches}")
        _put_events(dynamodb, name, "last")
    finally:
        tail.stop(timeout=DEADLINE_SECONDS)  # reads the stream once more: "last" too
    assert [t for b in batches for t in _tags(b)] == ["a", "b", "last"]
    record = batches[0]["Records"][0]
    assert (record["eventName"], record["eventSource"], record["eventSourceARN"]) == (
        "INSERT",
        "aws:dynamodb",
        arn,
    )
    assert record["awsRegion"] == REGION and record["dynamodb"]["StreamViewType"] == "NEW_IMAGE"
    assert isinstance(record["dynamodb"]["ApproximateCreationDateTime"], float)
    assert record["dynamodb"]["Keys"] == {"pk": {"S": "OUTBOX#evt_a"}, "sk": {"S": "OUTBOX"}}


def test_a_failed_record_is_sent_again_from_itself_then_passed_over_after_the_retries(
    table: tuple[Any, str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="riverbeam_local")
    dynamodb, name, (streams, arn) = table
    source = template.load().stream_consumer
    assert source is not None
    calls: list[list[str]] = []

    def function(event: dict[str, Any]) -> dict[str, Any]:
        calls.append(_tags(event))
        if "boom" in _tags(event):
            raise RuntimeError("the function failed")  # the whole batch fails
        failed = [
            r["dynamodb"]["SequenceNumber"] for r in event["Records"] if "bad" in _tags({"Records": [r]})
        ]
        return {"batchItemFailures": [{"itemIdentifier": s} for s in failed]}

    retries = dataclasses.replace(source, max_retries=2)
    gated = Gated(streams)
    tail = table_stream.StreamTail(
        gated,
        arn,
        function,
        pattern=retries.pattern,
        batch_size=retries.batch_size,
        max_retries=retries.max_retries,
        wake=threading.Event(),
    )
    tail.start()
    try:
        _put_events(dynamodb, name, "ok1", "bad", "ok2")
        gated.open.set()
        _wait(lambda: len(calls) >= 3, f"not retried: {calls}")
        _put_events(dynamodb, name, "boom")
        _wait(lambda: len(calls) >= 6, f"not retried: {calls}")
        _put_events(dynamodb, name, "after")
        _wait(lambda: calls[-1] == ["after"], f"the tail stopped at a failing record: {calls}")
    finally:
        tail.stop(timeout=DEADLINE_SECONDS)
    # the first delivery and two retries of what follows the first failed record, then the next records
    assert calls == [
        ["ok1", "bad", "ok2"],
        ["bad", "ok2"],
        ["bad", "ok2"],
        ["boom"],
        ["boom"],
        ["boom"],
        ["after"],
    ]
    assert caplog.text.count("outbox records not published after 2 retries") == 2
    # what each delivery took is logged once per delivery, with the event's id
    assert caplog.text.count("event Approval Requested") >= 4 and "id=evt_after" in caplog.text


def test_the_templates_filter_takes_outbox_inserts_only() -> None:
    source = template.load().stream_consumer
    assert source is not None and source.pattern is not None
    outbox_insert = {"eventName": "INSERT", "dynamodb": {"NewImage": {"entity": {"S": "outbox"}}}}
    assert table_stream.matches(source.pattern, outbox_insert)
    assert not table_stream.matches(source.pattern, outbox_insert | {"eventName": "MODIFY"})
    assert not table_stream.matches(source.pattern, outbox_insert | {"eventName": "REMOVE"})
    assert not table_stream.matches(source.pattern, {"eventName": "INSERT", "dynamodb": {"NewImage": {}}})
    assert not table_stream.matches(
        source.pattern, {"eventName": "INSERT", "dynamodb": {"NewImage": {"entity": {"S": "action"}}}}
    )

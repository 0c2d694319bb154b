"""Each store the contract suite runs on, and a snapshot of everything a store holds."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import boto3
from beam_store import DynamoBeamStore, InMemoryStore, OutboxEvent
from beam_store.dynamo import deserialize_item
from beam_store.dynamo.outbox_items import events_of, is_outbox
from beam_store.embedded import prepare_moto
from botocore.config import Config
from moto import mock_aws
from moto.core.botocore_stubber import BotocoreStubber

REGION = "us-east-1"
_moto_lock = threading.RLock()


@contextmanager
def serialized_moto() -> Iterator[None]:
    """moto's in-process backend is not thread-safe (a failed transaction restores a copy of the
    whole table): serve one request at a time, as the embedded server does."""
    prepare_moto()
    original = BotocoreStubber.process_request

    def locked(self: BotocoreStubber, request: Any) -> Any:
        with _moto_lock:
            return original(self, request)

    BotocoreStubber.process_request = locked  # type: ignore[method-assign]
    try:
        yield
    finally:
        BotocoreStubber.process_request = original  # type: ignore[method-assign]


def _contended(store: DynamoBeamStore) -> DynamoBeamStore:
    """The serialized moto backends answer one request at a time, far slower than DynamoDB under 8
    contending writers, and slower still on a loaded machine: give a step far more time to win than the
    production default (a step that loses for 15 minutes is a livelock, not a slow machine)."""
    store.max_attempts, store.max_seconds = 2000, 900.0
    return store


def dynamodb_client(endpoint_url: str | None = None) -> Any:
    config = Config(retries={"max_attempts": 3, "mode": "standard"}, max_pool_connections=32)
    return boto3.client("dynamodb", region_name=REGION, endpoint_url=endpoint_url, config=config)


def content_bucket(endpoint_url: str | None = None) -> tuple[str, Any]:
    """A new S3 bucket for large content (moto's, in process or on the embedded server) and its client."""
    s3 = boto3.client("s3", region_name=REGION, endpoint_url=endpoint_url)
    bucket = f"riverbeam-content-{uuid.uuid4().hex[:8]}"
    s3.create_bucket(Bucket=bucket)
    return bucket, s3


def _store(endpoint_url: str | None) -> DynamoBeamStore:
    """A store on a new table, with a content bucket of its own (as a deployment has)."""
    bucket, s3 = content_bucket(endpoint_url)
    return _contended(
        DynamoBeamStore.connect(
            f"riverbeam-{uuid.uuid4().hex[:8]}",
            client=dynamodb_client(endpoint_url),
            content_bucket=bucket,
            s3_client=s3,
        )
    )


@contextmanager
def moto_store() -> Iterator[DynamoBeamStore]:
    with mock_aws(), serialized_moto():
        yield _store(None)


def server_store(endpoint_url: str) -> DynamoBeamStore:
    return _store(endpoint_url)


def snapshot(store: Any) -> Any:
    """Everything the store holds, to show that a refused request wrote nothing."""
    if isinstance(store, InMemoryStore):
        return sorted(repr(record) for record in [*store.records(), *store.outbox()])
    items = [deserialize_item(i) for i in _scan(store)]
    return sorted(items, key=lambda i: (i["pk"], i["sk"]))


def _scan(store: DynamoBeamStore) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    start = None
    while True:
        page = store.client.scan(
            TableName=store.table_name, ConsistentRead=True, **({"ExclusiveStartKey": start} if start else {})
        )
        items.extend(page["Items"])
        start = page.get("LastEvaluatedKey")
        if not start:
            return items


def outbox(store: Any) -> list[OutboxEvent]:
    """The events of every write the store committed: in commit order from an InMemoryStore; from a
    table, each outbox item's in order, the items by key (a scan, as the stream is not read here)."""
    if isinstance(store, InMemoryStore):
        return store.outbox()
    items = sorted((i for i in _scan(store) if is_outbox(i)), key=lambda i: str(i["pk"]["S"]))
    return [event for item in items for event in events_of(item)]

"""The events function (EventsFunction, fed by the table's DynamoDB stream): each outbox item a write
inserted (beam_store/dynamo/outbox_items.py) has its approval events put on the bus (bus.py), with their ids.

Each stream record is one item of the batch (Powertools' BatchProcessor): a record whose events cannot be
read, or whose put EventBridge refuses in part (FailedEntryCount) or fails, is reported as a batch item
failure and delivered again (the event source mapping retries from it, bisects a failing batch, and sends
what still fails to the dead-letter queue); the others are done. A record delivered again puts all its
events again, with the same ids: delivery is at least once, and a consumer dedupes on `detail.id`.
Records of other items are passed over (the event source mapping's filter sends none in a deployment)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord
from aws_lambda_powertools.utilities.typing import LambdaContext
from beam_store.dynamo.outbox_items import events_of, is_outbox

from . import approval_metrics, bus, runtime

processor = BatchProcessor(event_type=EventType.DynamoDBStreams)


class Counts:
    """What one batch published, for its metrics."""

    def __init__(self) -> None:
        self.put = 0
        self.failed = 0


def outbox_image(record: DynamoDBRecord) -> dict[str, Any] | None:
    """The outbox item a record inserted, as attribute values; None for any other record."""
    raw = record.raw_event
    image = (raw.get("dynamodb") or {}).get("NewImage") or {}
    if raw.get("eventName") != "INSERT" or not is_outbox(image):
        return None
    return dict(image)


def _publisher(counts: Counts) -> Callable[[DynamoDBRecord], None]:
    def publish(record: DynamoDBRecord) -> None:
        image = outbox_image(record)
        if image is None:
            return
        bus_name = runtime.settings().event_bus_name
        sequence = record.dynamodb.sequence_number if record.dynamodb else None
        try:
            if not bus_name:
                raise ValueError("EVENT_BUS_NAME is not set")
            events = events_of(image)
            counts.put += bus.put(runtime.events_client(), bus_name, events)
        except Exception as error:
            counts.failed += 1
            extra = {"sequence_number": sequence, "error": f"{type(error).__name__}: {error}"}
            runtime.logger.warning("outbox record not published", extra=extra)
            raise
        # the approvals' metrics, once the events are on the bus (a record put again counts again)
        approval_metrics.record_published(events)

    return publish


def handle_stream(event: dict[str, Any], context: LambdaContext | None) -> dict[str, Any]:
    """A batch of stream records; the answer names the failed ones (batchItemFailures)."""
    counts = Counts()
    try:
        return dict(process_partial_response(event, _publisher(counts), processor, context))
    finally:
        runtime.metrics.add_metric(name="EventsPublished", unit=MetricUnit.Count, value=counts.put)
        runtime.metrics.add_metric(name="OutboxRecordsFailed", unit=MetricUnit.Count, value=counts.failed)

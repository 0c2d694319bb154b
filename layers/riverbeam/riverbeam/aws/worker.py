"""The queue worker: each message is a job accepted by a handler (`{"job": ...}`) or an invoke request
from any producer; one FIFO group per session keeps a session's runs in order and apart."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import SqsFifoPartialProcessor, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from ..errors import BeamError
from ..models import RunJob
from ..pipeline import RiverBeam, intake
from . import runtime
from .websocket import WebSocketPusher

# a worker's lease on its run lasts as long as its Lambda can still run, plus this margin
LEASE_MARGIN_SECONDS = 5


def job_of(beam: RiverBeam, record: SQSRecord) -> RunJob:
    """The job a message carries; an invoke request from a producer is accepted here, once (its ids are
    derived from the message id, so that a redelivery finds what the first delivery wrote)."""
    body = intake.parse_body(record.body)
    if "job" in body:
        return intake.parse_request(RunJob, body["job"])
    return beam.accept_queued_invoke(body, message_id=record.message_id)


def handle_record(record: SQSRecord, context: LambdaContext | None, pusher: WebSocketPusher) -> None:
    beam = runtime.beam()
    # this message's keys only: the batch's earlier messages were other sessions' runs
    runtime.logger.remove_keys(["session_id", "interaction_id", "run_id"])
    runtime.logger.append_keys(message_id=record.message_id)
    try:
        job = job_of(beam, record)
        runtime.logger.append_keys(
            session_id=job.session_id, interaction_id=job.interaction_id, run_id=job.run_id
        )
        remaining = context.get_remaining_time_in_millis() / 1000 if context is not None else 900
        result = beam.run_job(
            job,
            worker_id=getattr(context, "aws_request_id", None),
            lease_seconds=int(remaining) + LEASE_MARGIN_SECONDS,
            on_frame=pusher,
        )
    except BeamError as error:
        # reported as a batch item failure: delivered again, and after the queue's maxReceiveCount, the DLQ
        runtime.logger.warning(
            "queue message failed", extra={"code": error.code, "error_message": error.message}
        )
        runtime.metrics.add_metric(name="MessagesFailed", unit=MetricUnit.Count, value=1)
        raise
    runtime.metrics.add_metric(name="JobsRun", unit=MetricUnit.Count, value=1)
    if result is not None:
        runtime.record_usage(result.usage)


def lambda_record(message: dict[str, Any], queue_arn: str) -> dict[str, Any]:
    """A message as SQS ReceiveMessage (AttributeNames=All) returns it, as the event source mapping hands
    it to the worker: one record of the Lambda SQS event."""
    return {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": message.get("Attributes", {}),
        "messageAttributes": {
            name: {
                "stringValue": value.get("StringValue"),
                "binaryValue": value.get("BinaryValue"),
                "stringListValues": [],
                "binaryListValues": [],
                "dataType": value["DataType"],
            }
            for name, value in message.get("MessageAttributes", {}).items()
        },
        "md5OfBody": message["MD5OfBody"],
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": queue_arn.split(":")[3],
    }


def handle_batch(event: dict[str, Any], context: LambdaContext | None) -> dict[str, Any]:
    """Partial batch failures: a bad message fails alone (with the rest of its session's group, which must
    wait behind it); the other sessions' messages go on."""
    beam = runtime.beam()
    pusher = WebSocketPusher(beam, runtime.management_api())
    processor = SqsFifoPartialProcessor(skip_group_on_error=True)
    # a batch whose every message failed is answered like any other (the FIFO processor's __init__ does
    # not take the option its base class has)
    processor.raise_on_entire_batch_failure = False
    response = process_partial_response(
        event=event,
        record_handler=lambda record: handle_record(record, context, pusher),
        processor=processor,
        context=context,
    )
    runtime.metrics.add_metric(name="FramesPushed", unit=MetricUnit.Count, value=pusher.pushed)
    runtime.metrics.add_metric(name="ConnectionsGone", unit=MetricUnit.Count, value=pusher.gone)
    return dict(response)

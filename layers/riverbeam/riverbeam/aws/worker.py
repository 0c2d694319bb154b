"""The queue worker: each message is a job accepted by a handler (`{"job": ...}`) or an invoke request
from any producer; one FIFO group per session keeps a session's runs in order and apart."""

from __future__ import annotations

from typing import Any, NamedTuple

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from ..errors import BeamError
from ..models import RunJob
from ..pipeline import RiverBeam, intake
from ..telemetry import carriers
from . import refusals, runtime
from .push import WebSocketPusher

# a worker's lease on its run lasts as long as its Lambda can still run, plus this margin
LEASE_MARGIN_SECONDS = 5


class SQSRecord(NamedTuple):
    """What the worker reads of a record of the Lambda SQS event, without Powertools' batch utility (the
    import budgets: docs/benchmarks.md)."""

    message_id: str
    body: str
    group_id: str | None
    # the W3C trace context the producer sent in its message attributes (empty: none)
    trace: dict[str, str]

    @classmethod
    def of(cls, record: dict[str, Any]) -> SQSRecord:
        group = (record.get("attributes") or {}).get("MessageGroupId")
        trace = carriers.from_sqs_record(record)
        return cls(str(record["messageId"]), str(record.get("body") or ""), group, trace)


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
        # the run's span continues the trace of the request that queued it, where one was sent
        with carriers.continued(record.trace):
            result = beam.run_job(
                job,
                worker_id=getattr(context, "aws_request_id", None),
                lease_seconds=int(remaining) + LEASE_MARGIN_SECONDS,
                on_frame=pusher,
            )
    except Exception as error:
        # reported as a batch item failure: delivered again, and after the queue's maxReceiveCount, the DLQ;
        # an unknown error is BEM-500, its traceback logged
        failure = refusals.as_refusal(error)
        runtime.logger.warning(
            "queue message failed", extra={"code": failure.code, "error_message": failure.message}
        )
        runtime.metrics.add_metric(name="MessagesFailed", unit=MetricUnit.Count, value=1)
        raise failure from None
    runtime.metrics.add_metric(name="JobsRun", unit=MetricUnit.Count, value=1)
    if result is not None:
        runtime.record_usage(result.usage)


def handle_batch(event: dict[str, Any], context: LambdaContext | None) -> dict[str, Any]:
    """Partial batch failures, as a FIFO queue needs them: a bad message fails alone with the rest of its
    session's group, which must wait behind it; the other sessions' messages go on."""
    beam = runtime.beam()
    pusher = WebSocketPusher(beam, runtime.management_api())
    failed: list[str] = []
    failed_groups: set[str] = set()
    for raw in event.get("Records") or []:
        record = SQSRecord.of(raw)
        if record.group_id is not None and record.group_id in failed_groups:
            failed.append(record.message_id)  # behind a failed message of its group: delivered again later
            continue
        try:
            handle_record(record, context, pusher)
        except Exception as error:
            if not isinstance(error, BeamError):
                runtime.logger.exception("queue message failed")
            failed.append(record.message_id)
            if record.group_id is not None:
                failed_groups.add(record.group_id)
    runtime.metrics.add_metric(name="FramesPushed", unit=MetricUnit.Count, value=pusher.pushed)
    runtime.metrics.add_metric(name="ConnectionsGone", unit=MetricUnit.Count, value=pusher.gone)
    return {"batchItemFailures": [{"itemIdentifier": message_id} for message_id in failed]}

"""Invoke and resume as the HTTP and WebSocket routes serve them: checks and opening writes here, the
agent in the worker (streamed), or the agent inline (a non-streamed invoke). The WebSocket routes `invoke`
and `resume` are here too (`message`), apart from `$connect` (websocket.py), whose models they never need."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from pydantic import BaseModel, ValidationError

from ..errors import BeamError
from ..models import AgentResult, AuthContext, InvokeRequest, RunJob, VoteAck
from ..pipeline import intake
from ..telemetry import carriers
from . import refusals, runtime

CallerOf = Callable[[dict[str, Any]], AuthContext]


def _with_caller(raw_body: Any, caller_of: CallerOf, **fields: Any) -> intake.Body:
    """The body, parsed once (or as the adapter parsed it), with the caller the deployment decided on,
    whatever auth_context it carried."""
    body = intake.parse_body(raw_body)
    return intake.with_fields(body, auth_context=caller_of(body).model_dump(exclude_none=True), **fields)


def enqueue(job: RunJob) -> None:
    """Hand an accepted job to the worker, as one FIFO message: one group per session (its runs never
    overlap), deduplicated by run. Where the queue refuses it, close its run `failed` so the interaction is
    not left busy, and answer BEM-503. The request's trace context, where it is traced, goes along as
    message attributes (W3C traceparent): the worker's run continues the request's trace."""
    trace = carriers.outgoing()
    attributes: dict[str, Any] = {"MessageAttributes": carriers.sqs_attributes(trace)} if trace else {}
    try:
        runtime.sqs().send_message(
            QueueUrl=runtime.settings().queue_url,
            MessageBody=json.dumps({"job": job.model_dump(mode="json")}),
            MessageGroupId=job.session_id,
            MessageDeduplicationId=job.run_id,
            **attributes,
        )
    except Exception:
        runtime.logger.exception("the queue refused a job", extra={"run_id": job.run_id})
        failure = BeamError("BEM-503", "the job could not be queued; try again")
        runtime.beam().abandon_job(job, failure)
        raise failure from None


def _accepted(job: RunJob, kind: str) -> tuple[int, BaseModel]:
    """The answer to a job the pipeline handed to `enqueue` (or, for a request sent again with its
    request_id, the first request's job: queued then, not again)."""
    runtime.logger.append_keys(
        session_id=job.session_id, interaction_id=job.interaction_id, run_id=job.run_id
    )
    runtime.metrics.add_metric(name=f"{kind}Accepted", unit=MetricUnit.Count, value=1)
    return 202, job.ack()


def invoke(raw_body: Any, caller_of: CallerOf, *, force_stream: bool = False) -> tuple[int, BaseModel]:
    """`caller_of(body)` decides the identity. Streamed: a StreamAck (202); else the Result (200)."""
    body = _with_caller(raw_body, caller_of, **({"stream": True} if force_stream else {}))
    request = intake.parse_request(InvokeRequest, body)
    beam = runtime.beam()
    if request.stream:
        return _accepted(beam.accept_invoke(request, hand_off=enqueue), "Invoke")
    result = beam.invoke(request)
    assert isinstance(result, AgentResult)
    runtime.metrics.add_metric(name="InvokeCompleted", unit=MetricUnit.Count, value=1)
    runtime.record_usage(result.usage)
    return 200, result


def resume(raw_body: Any, caller_of: CallerOf) -> tuple[int, BaseModel]:
    """Resume always streams: the actions are resolved here, atomically; the agent runs in the worker.
    Answers that only add votes to actions that need several approvals run nothing (a VoteAck, 202)."""
    job = runtime.beam().accept_resume(_with_caller(raw_body, caller_of), hand_off=enqueue)
    if isinstance(job, VoteAck):  # votes added, no quorum yet: nothing runs
        return 202, job
    return _accepted(job, "Resume")


def response(status: int, body: str) -> dict[str, Any]:
    """A WebSocket route's answer."""
    return {"statusCode": status, "headers": {"Content-Type": "application/json"}, "body": body}


def refusal(error: Exception, request_id: str | None) -> dict[str, Any]:
    return response(*refusals.answer(error, request_id))


def message(event: dict[str, Any]) -> dict[str, Any]:
    """The `invoke` and `resume` routes: the body is the HTTP request's, plus `"action"`; the caller is
    the connection's subscriber; the answer (a StreamAck or an error) goes back on the connection. The
    body is parsed once, here."""
    # the WebSocket message's models are made by the first message, not at init: an HTTP request never
    # uses them
    from .identity import MessageCaller, caller
    from .websocket_events import MessageEvent

    request_id = None
    try:
        parsed = MessageEvent.model_validate(event)
        context = parsed.request_context
        request_id = context.request_id
        subscriber = runtime.beam().subscriber(context.connection_id)
        raw = parsed.body if isinstance(parsed.body, str) else ""
        body = intake.parse_body(intake.decoded_body(raw, base64_encoded=parsed.is_base64_encoded))
        body = intake.with_fields(body, action=None)
        runtime.logger.append_keys(connection_id=context.connection_id)
        settings = runtime.settings()

        def caller_of(given: dict[str, Any]) -> AuthContext:  # its groups as on HTTP (identity.py)
            return caller(settings, MessageCaller(subscriber, given))

        if context.route_key == "resume":
            status, answer = resume(body, caller_of)
        else:
            status, answer = invoke(body, caller_of, force_stream=True)
    except ValidationError:
        return refusal(BeamError("BEM-001", "not a WebSocket message event"), request_id)
    except Exception as error:
        return refusal(error, request_id)
    return response(status, answer.model_dump_json())

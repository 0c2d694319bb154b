"""The WebSocket API: `$connect` (only the session's owner subscribes), `$disconnect`, and the `invoke` and
`resume` routes (push.py posts the frames to a session's connections)."""

from __future__ import annotations

import uuid
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from pydantic import BaseModel, ValidationError

from ..errors import BeamError
from ..pipeline import intake
from . import refusals, runtime, service
from .events import ConnectEvent, DisconnectEvent, MessageEvent
from .identity import ConnectCaller, caller


def _answer(status: int, model: BaseModel) -> dict[str, Any]:
    return _response(status, model.model_dump_json())


def _response(status: int, body: str) -> dict[str, Any]:
    return {"statusCode": status, "headers": {"Content-Type": "application/json"}, "body": body}


def _refusal(error: Exception, request_id: str | None) -> dict[str, Any]:
    return _response(*refusals.answer(error, request_id))


def _session_id(query: dict[str, str]) -> str:
    try:
        return str(uuid.UUID(query.get("session_id", "")))
    except ValueError:
        raise BeamError("BEM-001", "connect with ?session_id=<uuid>", field="session_id") from None


def connect(event: dict[str, Any]) -> dict[str, Any]:
    """Subscribe the connection to its session's frames. A session that does not exist yet is reserved for
    the subscriber, so its first invoke must come from the same user; anyone else is refused (403)."""
    request_id = None
    try:
        parsed = ConnectEvent.model_validate(event)
        context = parsed.request_context
        request_id = context.request_id
        query = parsed.query_string_parameters or {}
        session_id = _session_id(query)
        user = caller(runtime.settings(), ConnectCaller(query))
        runtime.beam().subscribe(context.connection_id, session_id, user)
    except BeamError as error:
        return _refusal(error, request_id)
    except ValidationError:
        return _refusal(BeamError("BEM-001", "not a WebSocket $connect event"), request_id)
    runtime.logger.append_keys(session_id=session_id, connection_id=context.connection_id)
    runtime.logger.info("subscribed")
    runtime.metrics.add_metric(name="Connected", unit=MetricUnit.Count, value=1)
    return {"statusCode": 200}


def disconnect(event: dict[str, Any]) -> dict[str, Any]:
    parsed = DisconnectEvent.model_validate(event)
    runtime.beam().forget_connection(parsed.request_context.connection_id)
    return {"statusCode": 200}


def message(event: dict[str, Any]) -> dict[str, Any]:
    """The `invoke` and `resume` routes: the body is the HTTP request's, plus `"action"`; the caller is
    the connection's subscriber; the answer (a StreamAck or an error) goes back on the connection. The
    body is parsed once, here."""
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
        if context.route_key == "resume":
            status, answer = service.resume(body, lambda _: subscriber)
        else:
            status, answer = service.invoke(body, lambda _: subscriber, force_stream=True)
    except ValidationError:
        return _refusal(BeamError("BEM-001", "not a WebSocket message event"), request_id)
    except Exception as error:
        return _refusal(error, request_id)
    return _answer(status, answer)

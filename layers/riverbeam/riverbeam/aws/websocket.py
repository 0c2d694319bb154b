"""The WebSocket API's `$connect` (only the session's owner subscribes) and `$disconnect`, with their
events' models (the `invoke` and `resume` routes are service.py's; push.py posts the frames to a session's
connections)."""

# no `from __future__ import annotations`: models evaluate their annotations faster as objects
import uuid
from typing import Any, Literal

from aws_lambda_powertools.metrics import MetricUnit
from pydantic import Field, ValidationError

from ..errors import BeamError
from . import runtime
from .identity import ConnectCaller, caller
from .service import refusal
from .websocket_events import EventModel, RequestContext


class ConnectContext(RequestContext):
    route_key: Literal["$connect"] = Field(alias="routeKey")
    event_type: Literal["CONNECT"] = Field(alias="eventType")
    message_direction: Literal["IN"] = Field(alias="messageDirection")


class DisconnectContext(RequestContext):
    route_key: Literal["$disconnect"] = Field(alias="routeKey")
    disconnect_status_code: int = Field(alias="disconnectStatusCode")
    event_type: Literal["DISCONNECT"] = Field(alias="eventType")
    message_direction: Literal["IN"] = Field(alias="messageDirection")
    disconnect_reason: str = Field(alias="disconnectReason")


class ConnectEvent(EventModel):
    headers: dict[str, str] = Field(alias="headers")
    multi_value_headers: dict[str, list[str]] = Field(alias="multiValueHeaders")
    request_context: ConnectContext = Field(alias="requestContext")
    is_base64_encoded: bool = Field(alias="isBase64Encoded")
    query_string_parameters: dict[str, str] | None = Field(None, alias="queryStringParameters")


class DisconnectEvent(EventModel):
    headers: dict[str, str] = Field(alias="headers")
    multi_value_headers: dict[str, list[str]] = Field(alias="multiValueHeaders")
    request_context: DisconnectContext = Field(alias="requestContext")
    is_base64_encoded: bool = Field(alias="isBase64Encoded")


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
    except ValidationError:
        return refusal(BeamError("BEM-001", "not a WebSocket $connect event"), request_id)
    except Exception as error:  # a refusal, or an unknown error (BEM-500)
        return refusal(error, request_id)
    runtime.logger.append_keys(session_id=session_id, connection_id=context.connection_id)
    runtime.logger.info("subscribed")
    runtime.metrics.add_metric(name="Connected", unit=MetricUnit.Count, value=1)
    return {"statusCode": 200}


def disconnect(event: dict[str, Any]) -> dict[str, Any]:
    parsed = DisconnectEvent.model_validate(event)
    runtime.beam().forget_connection(parsed.request_context.connection_id)
    return {"statusCode": 200}

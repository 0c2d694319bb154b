"""A request as API Gateway hands it to a Lambda function (HTTP API payload 2.0, WebSocket
CONNECT/MESSAGE/DISCONNECT), and the function's answer back as an HTTP response."""

from __future__ import annotations

import base64
import json
import secrets
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

from .invocation import ACCOUNT_ID

HTTP_API_ID = "local-http"
WEBSOCKET_API_ID = "local-ws"
# the local HTTP API is served at the root, as a `$default` stage is
HTTP_STAGE = "$default"
# content types API Gateway passes as text; anything else it base64-encodes
_TEXT_TYPES = ("text/", "application/json", "application/xml", "application/javascript", "+json", "+xml")


def api_gateway_id() -> str:
    """An id shaped like API Gateway's request and connection ids (16 characters, base64)."""
    return base64.urlsafe_b64encode(secrets.token_bytes(10)).decode()


def _now() -> tuple[int, str]:
    epoch_ms = int(time.time() * 1000)
    return epoch_ms, time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(epoch_ms / 1000))


@dataclass(frozen=True)
class Request:
    """What the events need of an HTTP request or WebSocket handshake, already taken off the wire."""

    method: str
    path: str
    query_string: str
    headers: list[tuple[str, str]]
    source_ip: str
    host: str
    http_version: str = "1.1"
    body: bytes = b""
    path_parameters: dict[str, str] = field(default_factory=dict)

    def header(self, name: str) -> str:
        return ",".join(v for k, v in self.headers if k.lower() == name)


def _joined(pairs: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Repeated names joined with commas, as payload 2.0 does for headers and query parameters."""
    joined: dict[str, str] = {}
    for name, value in pairs:
        joined[name] = f"{joined[name]},{value}" if name in joined else value
    return joined


def _multi(pairs: Iterable[tuple[str, str]]) -> dict[str, list[str]]:
    multi: dict[str, list[str]] = {}
    for name, value in pairs:
        multi.setdefault(name, []).append(value)
    return multi


def _body(request: Request) -> tuple[str | None, bool]:
    if not request.body:
        return None, False
    content_type = request.header("content-type").lower()
    if not content_type or any(t in content_type for t in _TEXT_TYPES):
        try:
            return request.body.decode(), False
        except UnicodeDecodeError:
            pass
    return base64.b64encode(request.body).decode(), True


def http_event(request: Request, route_key: str) -> dict[str, Any]:
    """An HTTP API payload format 2.0 event."""
    epoch_ms, when = _now()
    headers = [(k.lower(), v) for k, v in request.headers if k.lower() != "cookie"]
    cookies = [c.strip() for c in request.header("cookie").split(";") if c.strip()]
    query = parse_qsl(request.query_string, keep_blank_values=True)
    body, encoded = _body(request)
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": route_key,
        "rawPath": request.path,
        "rawQueryString": request.query_string,
        "headers": _joined(headers),
        "requestContext": {
            "accountId": ACCOUNT_ID,
            "apiId": HTTP_API_ID,
            "domainName": request.host,
            "domainPrefix": request.host.split(".")[0],
            "http": {
                "method": request.method,
                "path": request.path,
                "protocol": f"HTTP/{request.http_version}",
                "sourceIp": request.source_ip,
                "userAgent": request.header("user-agent"),
            },
            "requestId": api_gateway_id(),
            "routeKey": route_key,
            "stage": HTTP_STAGE,
            "time": when,
            "timeEpoch": epoch_ms,
        },
        "isBase64Encoded": encoded,
    }
    # API Gateway leaves out what a request does not have
    if cookies:
        event["cookies"] = cookies
    if query:
        event["queryStringParameters"] = _joined(query)
    if request.path_parameters:
        event["pathParameters"] = dict(request.path_parameters)
    if body is not None:
        event["body"] = body
    return event


def authorizer_claims(claims: dict[str, Any]) -> dict[str, Any]:
    """A verified token's claims as the HTTP API's JWT authorizer hands them on: each a string, an array
    as `[a b]`."""
    return {
        name: f"[{' '.join(map(str, value))}]" if isinstance(value, list) else str(value)
        for name, value in claims.items()
        if not isinstance(value, dict)
    }


@dataclass(frozen=True)
class HttpAnswer:
    status: int
    headers: list[tuple[str, str]]
    body: bytes


def http_answer(answer: Any) -> HttpAnswer:
    """A function's answer as API Gateway turns it into a response (payload 2.0): a dict with `statusCode`,
    or any other JSON value, sent as the body with status 200."""
    if not isinstance(answer, dict) or "statusCode" not in answer:
        return HttpAnswer(200, [("content-type", "application/json")], json.dumps(answer).encode())
    headers = [(k.lower(), str(v)) for k, v in (answer.get("headers") or {}).items()]
    for name, values in (answer.get("multiValueHeaders") or {}).items():
        headers += [(name.lower(), str(v)) for v in values]
    headers += [("set-cookie", str(c)) for c in answer.get("cookies") or []]
    raw = answer.get("body") or ""
    body = base64.b64decode(raw) if answer.get("isBase64Encoded") else str(raw).encode()
    return HttpAnswer(int(answer["statusCode"]), headers, body)


@dataclass(frozen=True)
class Connection:
    """What a WebSocket connection's events share: its id, when it opened, who opened it."""

    connection_id: str
    connected_at_ms: int
    source_ip: str
    user_agent: str
    host: str


def new_connection(request: Request) -> Connection:
    return Connection(
        api_gateway_id(),
        int(time.time() * 1000),
        request.source_ip,
        request.header("user-agent"),
        request.host,
    )


def _ws_context(connection: Connection, route_key: str, event_type: str, stage: str) -> dict[str, Any]:
    epoch_ms, when = _now()
    request_id = api_gateway_id()
    return {
        "routeKey": route_key,
        "eventType": event_type,
        "extendedRequestId": request_id,
        "requestTime": when,
        "messageDirection": "IN",
        "stage": stage,
        "connectedAt": connection.connected_at_ms,
        "requestTimeEpoch": epoch_ms,
        "identity": {"sourceIp": connection.source_ip, "userAgent": connection.user_agent},
        "requestId": request_id,
        "domainName": connection.host,
        "connectionId": connection.connection_id,
        "apiId": WEBSOCKET_API_ID,
    }


def connect_event(connection: Connection, request: Request, stage: str) -> dict[str, Any]:
    """`$connect`: the handshake's headers and query string."""
    query = parse_qsl(request.query_string, keep_blank_values=True)
    event: dict[str, Any] = {
        "headers": _joined(request.headers),
        "multiValueHeaders": _multi(request.headers),
        "requestContext": _ws_context(connection, "$connect", "CONNECT", stage),
        "isBase64Encoded": False,
    }
    if query:
        event["queryStringParameters"] = _joined(query)
        event["multiValueQueryStringParameters"] = _multi(query)
    return event


def message_event(connection: Connection, route_key: str, body: str, stage: str) -> dict[str, Any]:
    context = _ws_context(connection, route_key, "MESSAGE", stage)
    context["messageId"] = api_gateway_id()
    return {"requestContext": context, "body": body, "isBase64Encoded": False}


def disconnect_event(connection: Connection, stage: str, status: int, reason: str) -> dict[str, Any]:
    context = _ws_context(connection, "$disconnect", "DISCONNECT", stage)
    context.update(disconnectStatusCode=status, disconnectReason=reason)
    headers = [("Host", connection.host), ("X-Forwarded-For", connection.source_ip)]
    return {
        "headers": _joined(headers),
        "multiValueHeaders": _multi(headers),
        "requestContext": context,
        "isBase64Encoded": False,
    }


def selected_route(body: str, expression: str) -> str | None:
    """The route key a message selects with `$request.body.<path>` (API Gateway's route selection), or None
    when the message is not JSON or has no such value."""
    prefix = "$request.body."
    if not expression.startswith(prefix):
        return None
    try:
        value: Any = json.loads(body)
    except ValueError:
        return None
    for part in expression[len(prefix) :].split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value if isinstance(value, str) else None

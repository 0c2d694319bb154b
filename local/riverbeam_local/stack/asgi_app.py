"""The ASGI app: the template's HTTP routes, the WebSocket API at /ws and the management API's
/@connections/{id}, each request turned into its API Gateway event and handed to its function in a worker
thread (the event loop never waits on a handler)."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import anyio.to_thread
from anyio import CapacityLimiter
from riverbeam.errors import BeamError
from starlette.applications import Starlette
from starlette.requests import HTTPConnection, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route, WebSocketRoute
from starlette.websockets import WebSocket

from .. import lambda_like as events
from ..inbox import pages
from .connections import Live, Registry
from .door import CLAIMS_KEY, LOGIN_PATH
from .functions import Functions
from .template import Function, Template
from .template import WebSocketRoute as TemplateWebSocketRoute

log = logging.getLogger("riverbeam_local")
WEBSOCKET_PATH = "/ws"
# `path`: an id is taken whole, whatever it holds once decoded
MANAGEMENT_PATH = "/@connections/{connection_id:path}"
# what $default and ANY take (Starlette reads methods=None as GET alone)
ANY_METHOD = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
# handlers that may run at once (Lambda would start more containers; a laptop has a few cores)
MAX_HANDLER_THREADS = 16


def _logged(method: str, target: str, status: int, started: float) -> None:
    log.info("%s %s %d %d ms", method, target, status, (time.monotonic() - started) * 1000)


def _request(connection: HTTPConnection, body: bytes = b"") -> events.Request:
    scope = connection.scope
    raw_path = scope.get("raw_path")
    return events.Request(
        method=scope.get("method", "GET"),
        path=raw_path.decode("latin-1") if raw_path else scope["path"],
        query_string=scope.get("query_string", b"").decode("latin-1"),
        headers=[(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"]],
        source_ip=connection.client.host if connection.client else "127.0.0.1",
        host=connection.headers.get("host", "127.0.0.1"),
        http_version=scope.get("http_version", "1.1"),
        body=body,
        path_parameters=dict(connection.path_params),
    )


def _status_and_body(answer: Any) -> tuple[int, str]:
    """A WebSocket route's answer: its status, and the body a route response sends back."""
    if isinstance(answer, dict) and "statusCode" in answer:
        return int(answer["statusCode"]), str(answer.get("body") or "")
    return 200, "" if answer is None else json.dumps(answer)


def _iso(epoch_ms: int) -> str:
    return datetime.fromtimestamp(epoch_ms / 1000, UTC).isoformat().replace("+00:00", "Z")


def _gone(connection_id: str) -> Response:
    # API Gateway's answer for a closed or unknown connection; boto3 reads the error type header
    return JSONResponse(
        {"message": f"connection {connection_id} is gone"},
        status_code=410,
        headers={"x-amzn-ErrorType": "GoneException"},
    )


class Api:
    def __init__(self, template: Template, functions: Functions, login: dict[str, str] | None = None) -> None:
        self.template = template
        self.login = login  # AuthMode jwt: the user pool `riverbeam login` signs in to
        self.functions = functions
        self.connections = Registry()
        self._limiter = CapacityLimiter(MAX_HANDLER_THREADS)
        self._tasks: set[asyncio.Task[None]] = set()

    async def call(self, function: Function, event: dict[str, Any]) -> Any:
        return await anyio.to_thread.run_sync(self.functions.call, function, event, limiter=self._limiter)

    # ------------------------------------------------------------------ HTTP API

    def http_endpoint(self, function: Function, route_key: str) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            started = time.monotonic()
            event = events.http_event(_request(request, await request.body()), route_key)
            if (
                CLAIMS_KEY in request.scope
            ):  # AuthMode jwt: the door checked the token, as the authorizer does
                claims = events.authorizer_claims(request.scope[CLAIMS_KEY])
                event["requestContext"]["authorizer"] = {"jwt": {"claims": claims, "scopes": None}}
            request_id = event["requestContext"]["requestId"]
            try:
                answer = events.http_answer(await self.call(function, event))
            except Exception:  # the function itself crashed: BEM-500, as its own edge would answer
                log.exception("%s failed on %s", function.name, route_key)
                body = BeamError("BEM-500").to_response(request_id).model_dump_json().encode()
                answer = events.HttpAnswer(500, [("content-type", "application/json")], body)
            response = Response(answer.body, status_code=answer.status)
            response.raw_headers += [
                (k.encode("latin-1"), v.encode("latin-1")) for k, v in answer.headers if k != "content-length"
            ]
            response.raw_headers.append((b"apigw-requestid", request_id.encode()))
            _logged(request.method, request.url.path, answer.status, started)
            return response

        return endpoint

    # ------------------------------------------------------------------ management API

    async def post_to_connection(self, request: Request) -> Response:
        started = time.monotonic()
        connection_id = request.path_params["connection_id"]
        live = self.connections.get(connection_id)
        sent = live is not None and await live.send(await request.body())
        response = Response(status_code=200) if sent else _gone(connection_id)
        _logged("POST", f"/@connections/{connection_id}", response.status_code, started)
        return response

    async def get_connection(self, request: Request) -> Response:
        connection_id = request.path_params["connection_id"]
        live = self.connections.get(connection_id)
        if live is None:
            return _gone(connection_id)
        return JSONResponse(
            {
                "ConnectedAt": _iso(live.info.connected_at_ms),
                "Identity": {"SourceIp": live.info.source_ip, "UserAgent": live.info.user_agent},
                "LastActiveAt": _iso(live.last_active_ms),
            }
        )

    async def delete_connection(self, request: Request) -> Response:
        started = time.monotonic()
        connection_id = request.path_params["connection_id"]
        live = self.connections.get(connection_id)
        if live is not None:
            await live.close()
        response = Response(status_code=204) if live is not None else _gone(connection_id)
        _logged("DELETE", f"/@connections/{connection_id}", response.status_code, started)
        return response

    # ------------------------------------------------------------------ WebSocket API

    async def _route(self, route: TemplateWebSocketRoute, event: dict[str, Any]) -> tuple[int, str]:
        try:
            return _status_and_body(await self.call(route.function, event))
        except Exception:
            log.exception("%s failed on %s", route.function.name, route.route_key)
            return 500, ""

    async def websocket(self, websocket: WebSocket) -> None:
        started = time.monotonic()
        request = _request(websocket)
        info = events.new_connection(request)
        stage, routes = self.template.stage, self.template.websocket_routes
        if "$connect" in routes:
            event = events.connect_event(info, request, stage)
            status, body = await self._route(routes["$connect"], event)
            _logged("WS", "$connect", status, started)
            if not 200 <= status < 300:  # refused: the handshake fails with the function's status
                await websocket.send_denial_response(
                    Response(body, status_code=status, media_type="application/json")
                )
                return
        await websocket.accept()
        live = Live(info, websocket)
        self.connections.add(live)
        code, reason = 1005, ""
        try:
            while True:
                message = await websocket.receive()
                if message["type"] == "websocket.disconnect":
                    code, reason = int(message.get("code") or 1005), str(message.get("reason") or "")
                    break
                text = message.get("text")
                if text is None:
                    text = (message.get("bytes") or b"").decode("utf-8", "replace")
                # routes run side by side, as API Gateway invokes them; the loop goes on receiving
                task = asyncio.create_task(self._message(live, text))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
        finally:
            live.closed = True
            self.connections.remove(info.connection_id)
            if "$disconnect" in routes:
                started = time.monotonic()
                event = events.disconnect_event(info, stage, code, reason)
                status, _ = await self._route(routes["$disconnect"], event)
                _logged("WS", "$disconnect", status, started)

    async def _message(self, live: Live, text: str) -> None:
        started = time.monotonic()
        routes = self.template.websocket_routes
        key = events.selected_route(text, self.template.route_selection_expression)
        route = routes.get(key) if key not in (None, "$connect", "$disconnect") else None
        route = route or routes.get("$default")
        if route is None:
            # API Gateway's answer to a message no route takes
            refusal = {
                "message": "Forbidden",
                "connectionId": live.info.connection_id,
                "requestId": events.api_gateway_id(),
            }
            await live.send(json.dumps(refusal))
            _logged("WS", str(key), 403, started)
            return
        event = events.message_event(live.info, route.route_key, text, self.template.stage)
        status, body = await self._route(route, event)
        if status >= 500 and not body:
            failure = {
                "message": "Internal server error",
                "connectionId": live.info.connection_id,
                "requestId": event["requestContext"]["requestId"],
            }
            body = json.dumps(failure)
        if route.responds and body:
            await live.send(body)
        _logged("WS", route.route_key, status, started)

    # ------------------------------------------------------------------ the app

    def routes(self) -> list[BaseRoute]:
        found: list[BaseRoute] = [
            WebSocketRoute(WEBSOCKET_PATH, self.websocket),
            Route(MANAGEMENT_PATH, self.post_to_connection, methods=["POST"]),
            Route(MANAGEMENT_PATH, self.get_connection, methods=["GET"]),
            Route(MANAGEMENT_PATH, self.delete_connection, methods=["DELETE"]),
        ]
        if self.login is not None:
            pool = self.login
            found.append(Route(LOGIN_PATH, lambda _: JSONResponse(pool), methods=["GET"]))
        catch_all = []
        for route in self.template.http_routes:
            endpoint = self.http_endpoint(route.function, route.route_key)
            if route.route_key == "$default":
                catch_all.append(Route("/{path:path}", endpoint, methods=ANY_METHOD))
                continue
            path = route.path.replace("+}", ":path}")  # API Gateway's greedy {name+}
            methods = ANY_METHOD if route.method == "ANY" else [route.method]
            found.append(Route(path, endpoint, methods=methods))
        return found + catch_all


async def _not_found(request: Request, _: Exception) -> Response:
    # the HTTP API's answer for a request no route matches, whatever its method
    _logged(request.method, request.url.path, 404, time.monotonic())
    return JSONResponse({"message": "Not Found"}, status_code=404)


def create_app(api: Api) -> Starlette:
    return Starlette(
        routes=pages.routes() + api.routes(), exception_handlers={404: _not_found, 405: _not_found}
    )

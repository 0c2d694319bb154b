"""A hostile MCP server on 127.0.0.1 for the tests: it speaks just enough of the protocol (JSON-RPC over
streamable HTTP, answered as application/json, the initialize handshake) to be used by the `mcp` client,
and lists the tools and answers the calls the test gives it, as raw JSON: names with confusable letters,
schemas with a remote `$ref` or a backtracking `pattern`, results that fit no protocol model. Every request
it gets is kept (`requests`), so a test can tell what the stack sent where."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from starlette.types import Receive, Scope, Send

from tests.support.mcp_server import serving

PROTOCOL_VERSION = "2025-06-18"
METHOD_NOT_FOUND = -32601


@dataclass
class HostileFixture:
    url: str
    # the tools/list answer's tools, as the server gives them
    tools: list[dict[str, Any]] = field(default_factory=list)
    # a tools/call's JSON-RPC `result` by tool name (any JSON), or raw bytes sent as the whole body
    results: dict[str, Any] = field(default_factory=dict)
    calls: list[tuple[str, Any]] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)


def _answer(fixture: HostileFixture, message: dict[str, Any]) -> dict[str, Any] | bytes | None:
    """The JSON-RPC answer to `message` (None for a notification), or raw bytes for the whole body."""
    method, params = message.get("method"), message.get("params") or {}
    if "id" not in message:
        return None
    if method == "initialize":
        result: Any = {
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "hostile", "version": "1"},
        }
    elif method == "tools/list":
        result = {"tools": fixture.tools}
    elif method == "tools/call":
        name = params.get("name")
        fixture.calls.append((str(name), params.get("arguments")))
        result = fixture.results.get(str(name), {"content": [{"type": "text", "text": "ok"}]})
        if isinstance(result, bytes):
            return result
    elif method == "ping":
        result = {}
    else:
        error = {"code": METHOD_NOT_FOUND, "message": f"no method {method}"}
        return {"jsonrpc": "2.0", "id": message["id"], "error": error}
    return {"jsonrpc": "2.0", "id": message["id"], "result": result}


async def _body(receive: Receive) -> bytes:
    chunks = []
    while True:
        event = await receive()
        chunks.append(event.get("body", b""))
        if not event.get("more_body"):
            return b"".join(chunks)


def _app(fixture: HostileFixture) -> Any:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        fixture.requests.append(f"{scope['method']} {scope['path']}")
        answer = None
        if scope["method"] == "POST":
            answer = _answer(fixture, json.loads(await _body(receive)))
        status = 405 if scope["method"] != "POST" else 202 if answer is None else 200
        body = answer if isinstance(answer, bytes) else b"" if answer is None else json.dumps(answer).encode()
        headers = [(b"content-type", b"application/json")] if body else []
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return app


@contextmanager
def hostile_mcp_server() -> Iterator[HostileFixture]:
    """The hostile server at `fixture.url` (http://127.0.0.1:<port>/mcp) until the block ends."""
    sock = socket.create_server(("127.0.0.1", 0))
    fixture = HostileFixture(url=f"http://127.0.0.1:{sock.getsockname()[1]}/mcp")
    with serving(_app(fixture), sock, lifespan="off", what="the hostile MCP server"):
        yield fixture


def tool(name: str, schema: dict[str, Any] | None = None, **more: Any) -> dict[str, Any]:
    """A tools/list entry: `name`, its input schema (an object of a string `service` by default)."""
    default = {"type": "object", "properties": {"service": {"type": "string"}}, "required": ["service"]}
    return {"name": name, "inputSchema": schema or default, **more}

"""An MCP server on 127.0.0.1 for the tests (the `mcp` package's MCPServer, its streamable HTTP app served
by uvicorn in a thread): a destructive `deploy` and a read-only `status`, each counting its calls, and
`broken`, which always fails. `headers` makes it answer 401 to a request without them."""

from __future__ import annotations

import socket
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from mcp.server import MCPServer
from mcp_types import ToolAnnotations
from starlette.types import ASGIApp, Receive, Scope, Send


@dataclass
class McpFixture:
    url: str
    calls: Counter[str] = field(default_factory=Counter)
    args: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


def _server(fixture: McpFixture) -> MCPServer:
    server = MCPServer("release-tools")

    @server.tool(annotations=ToolAnnotations(destructive_hint=True, read_only_hint=False))
    def deploy(service: str, version: str, replicas: int = 1) -> str:
        """Deploy a version of a service."""
        fixture.calls["deploy"] += 1
        fixture.args.append(("deploy", {"service": service, "version": version, "replicas": replicas}))
        return f"deployed {service} {version} x{replicas}"

    @server.tool(annotations=ToolAnnotations(read_only_hint=True, destructive_hint=False))
    def status(service: str) -> str:
        """Say how a service is doing."""
        fixture.calls["status"] += 1
        return f"{service} is healthy"

    @server.tool()
    def broken(reason: str) -> str:
        """Always fails."""
        fixture.calls["broken"] += 1
        raise RuntimeError(f"broken on purpose: {reason}")

    return server


def _requiring(app: ASGIApp, headers: dict[str, str]) -> ASGIApp:
    wanted = {(k.lower().encode(), v.encode()) for k, v in headers.items()}

    async def checked(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not wanted <= set(scope.get("headers", [])):
            await send({"type": "http.response.start", "status": 401, "headers": []})
            await send({"type": "http.response.body", "body": b"unauthorized"})
            return
        await app(scope, receive, send)

    return checked


@contextmanager
def mcp_server(*, headers: dict[str, str] | None = None) -> Iterator[McpFixture]:
    """The test MCP server at `fixture.url` (http://127.0.0.1:<port>/mcp) until the block ends."""
    sock = socket.create_server(("127.0.0.1", 0))
    fixture = McpFixture(url=f"http://127.0.0.1:{sock.getsockname()[1]}/mcp")
    app: ASGIApp = _server(fixture).streamable_http_app(host="127.0.0.1")
    if headers:
        app = _requiring(app, headers)
    with serving(app, sock, lifespan="on", what="the test MCP server"):
        yield fixture


@contextmanager
def serving(app: Any, sock: socket.socket, *, lifespan: str, what: str) -> Iterator[None]:
    """`app` served by uvicorn on a thread from `sock` (bound to 127.0.0.1) until the block ends; the
    thread joined and the socket closed after."""
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan=lifespan))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.started, f"{what} did not start"
    try:
        yield
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()

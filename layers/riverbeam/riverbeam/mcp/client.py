"""Talking to one MCP server over streamable HTTP with the `mcp` package's client, from synchronous code
(a tool call, an agent being built): each exchange opens a session, does its one thing and closes it, within
a time limit. Whatever goes wrong is a BeamError naming the server: BEM-352 it cannot be reached, BEM-353 it
did not answer in time, BEM-354 it answered with an error, BEM-361 its answer fits no message of the
protocol (not JSON-RPC, or a result of the wrong shape). Nothing of the server's headers is ever told."""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import json
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio
import httpx2
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_types import PARSE_ERROR, CallToolRequest, CallToolRequestParams, CallToolResult, Tool
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from ..errors import BeamError, ToolError, clip

DEFAULT_TIMEOUT_SECONDS = 30.0
_T = TypeVar("_T")


@dataclass(frozen=True)
class McpServer:
    """A server by the name its tools are known by (`<name>/<tool>`), its URL and the headers it needs."""

    name: str
    url: str
    headers: dict[str, str] = field(default_factory=dict, repr=False)
    timeout: float = DEFAULT_TIMEOUT_SECONDS
    # a Secrets Manager secret (ARN or name) holding a JSON object of more headers, read by the first use
    headers_secret: str = ""
    _listed: list[Tool] = field(default_factory=list, repr=False, compare=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def list_tools(self) -> list[Tool]:
        """The server's tools, every page of them, asked for once; a failure is a BeamError that fails the
        run."""
        with self._lock:
            if not self._listed:
                self._listed.extend(_run(self, self._list_tools, tool_error=False))
            return list(self._listed)

    def all_headers(self) -> dict[str, str]:
        return (
            {**self.headers, **_secret_headers(self.name, self.headers_secret)}
            if self.headers_secret
            else self.headers
        )

    def call_tool(self, tool: str, args: dict[str, Any]) -> CallToolResult:
        """Call `tool` with `args`; a failure is a ToolError, the call's outcome."""
        return _run(self, functools.partial(_call, tool=tool, args=args), tool_error=True)

    async def _list_tools(self, client: Client) -> list[Tool]:
        listed = await client.list_tools()
        tools, cursor = list(listed.tools), listed.next_cursor
        for _ in range(100):  # a server that pages forever is cut off
            if not cursor:
                break
            listed = await client.list_tools(cursor=cursor)
            tools.extend(listed.tools)
            cursor = listed.next_cursor
        return tools


async def _call(client: Client, *, tool: str, args: dict[str, Any]) -> CallToolResult:
    """A tools/call, sent as the session's own request: the client's `call_tool` would check the result
    against the tool's output schema with Python's `re` (a backtracking pattern of the server's could
    freeze the stack); tools.py checks it safely instead. A modern session lists the tools first, so the
    args' `Mcp-Param-*` headers go with the call."""
    if client.protocol_version in MODERN_PROTOCOL_VERSIONS:
        await client.list_tools()
    request = CallToolRequest(params=CallToolRequestParams(name=tool, arguments=args))
    return await client.session.send_request(request, CallToolResult)


def _run(server: McpServer, exchange: Callable[[Client], Awaitable[_T]], *, tool_error: bool) -> _T:
    """`exchange` in a session with `server`, from synchronous code (in a thread of its own where this
    thread already runs an event loop, as a local server's handler may)."""

    async def session() -> _T:
        timeout = httpx2.Timeout(server.timeout)
        http = create_mcp_http_client(headers=dict(server.all_headers()), timeout=timeout)
        with anyio.fail_after(server.timeout):
            async with http, Client(streamable_http_client(server.url, http_client=http)) as client:
                return await exchange(client)

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _refused(server, session, tool_error)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(_refused, server, session, tool_error).result()


@functools.cache
def _secret_headers(server: str, secret_id: str) -> dict[str, str]:
    """The headers a secret holds (read once per process); one that cannot be read or is no JSON object
    of strings is BEM-356, naming the server and the secret, never its value."""
    import boto3
    from botocore.exceptions import BotoCoreError, ClientError

    where = f"the headers of the MCP server {server!r} ({secret_id!r})"
    try:
        value = boto3.client("secretsmanager").get_secret_value(SecretId=secret_id).get("SecretString")
        found = json.loads(value or "")
    except ClientError as error:
        reason = error.response.get("Error", {}).get("Code", "ClientError")
        raise BeamError("BEM-356", f"{where} cannot be read: {reason}") from None
    except (BotoCoreError, ValueError) as error:
        raise BeamError("BEM-356", f"{where} cannot be read: {type(error).__name__}") from None
    if not isinstance(found, dict) or not all(isinstance(v, str) for v in found.values()):
        raise BeamError("BEM-356", f"{where} are not a JSON object of strings")
    return {str(k): v for k, v in found.items()}


def _refused(server: McpServer, session: Callable[[], Awaitable[_T]], tool_error: bool) -> _T:
    error_type = ToolError if tool_error else BeamError
    try:
        return anyio.run(session)
    except BeamError:  # the headers' secret (BEM-356), read as the session opens
        raise
    except BaseException as raised:  # anyio's task groups raise groups; each cause is looked at
        code, reason = _cause(raised)
        if code is None:
            raise
        raise error_type(code, clip(f"the MCP server {server.name!r} {reason}", 500)) from None


def _cause(raised: BaseException) -> tuple[str | None, str]:
    """The code and words for what `raised` (or an exception in its group) says of the server."""
    causes = [raised]
    while causes:
        error = causes.pop(0)
        if isinstance(error, BaseExceptionGroup):
            causes.extend(error.exceptions)
        elif isinstance(error, TimeoutError | httpx2.TimeoutException):
            return "BEM-353", "did not answer in time"
        elif isinstance(error, httpx2.HTTPStatusError):
            return "BEM-354", f"answered HTTP {error.response.status_code}"
        elif isinstance(error, httpx2.TransportError | OSError):
            return "BEM-352", f"cannot be reached: {type(error).__name__}"
        elif isinstance(error, MCPError) and error.code == PARSE_ERROR:
            return "BEM-361", "answered something that is not a JSON-RPC message"
        elif isinstance(error, MCPError):
            return "BEM-354", f"answered an error: {error}"
        elif isinstance(error, ValidationError):
            return "BEM-361", f"answered a malformed result ({_malformed(error)})"
        elif isinstance(error, Exception):  # the client's own refusal of what it got (RuntimeError...)
            return "BEM-361", f"answered what the client cannot use: {clip(str(error), 200)}"
    return None, ""


def _malformed(error: ValidationError) -> str:
    """Where a result is malformed, by its fields' names and pydantic's words (never the input)."""
    said = [f"{'.'.join(str(p) for p in e['loc']) or 'result'}: {e['msg']}" for e in error.errors()[:3]]
    return clip("; ".join(said), 300)

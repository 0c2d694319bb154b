"""Amazon Bedrock's ConverseStream served on 127.0.0.1 from a script: `riverbeam dev --model bedrock`, with
AWS_ENDPOINT_URL_BEDROCK_RUNTIME naming it, runs its configured agents on the answers a test chooses
(text with terminal sequences in it, a tool call with bidi characters in its args) through the real model
client, frames and stack. Each answer is a list of ConverseStream events (tests.support.bedrock makes
them), sent in AWS's event stream encoding."""

from __future__ import annotations

import binascii
import json
import struct
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Script = Callable[[dict[str, Any]], list[dict[str, Any]]]
ENDPOINT_VARIABLE = "AWS_ENDPOINT_URL_BEDROCK_RUNTIME"


def _header(name: str, value: str) -> bytes:
    """An event stream header of type string (7)."""
    raw_name, raw_value = name.encode(), value.encode()
    return bytes([len(raw_name)]) + raw_name + b"\x07" + struct.pack(">H", len(raw_value)) + raw_value


def event_message(event: dict[str, Any]) -> bytes:
    """One ConverseStream event ({"contentBlockDelta": {...}}) as an event stream message: prelude (total
    and headers lengths, their CRC32), headers, the JSON payload, the message's CRC32."""
    ((kind, body),) = event.items()
    headers = (
        _header(":event-type", kind)
        + _header(":content-type", "application/json")
        + _header(":message-type", "event")
    )
    payload = json.dumps(body).encode()
    prelude = struct.pack(">II", 16 + len(headers) + len(payload), len(headers))
    prelude += struct.pack(">I", binascii.crc32(prelude))
    message = prelude + headers + payload
    return message + struct.pack(">I", binascii.crc32(message))


def user_text(request: dict[str, Any]) -> str:
    """The text of the conversation's last user message ("" when it holds tool results only)."""
    last = request["messages"][-1]
    return " ".join(part["text"] for part in last["content"] if "text" in part)


def tool_results(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool results the last user message brings back."""
    return [part["toolResult"] for part in request["messages"][-1]["content"] if "toolResult" in part]


class _Handler(BaseHTTPRequestHandler):
    script: Script

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
        body = b"".join(event_message(event) for event in type(self).script(request))
        self.send_response(200)
        self.send_header("content-type", "application/vnd.amazon.eventstream")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: Any) -> None:  # quiet: the stack logs its own requests
        pass


@contextmanager
def fake_bedrock(script: Script) -> Iterator[str]:
    """A ConverseStream server on 127.0.0.1 answering each call with `script(request)`; yields its URL and
    stops it at the end."""
    with serving(type("ScriptedBedrock", (_Handler,), {"script": staticmethod(script)})) as url:
        yield url


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """An HTTP server on 127.0.0.1 (a free port) answering with `handler`, in a thread; yields its URL and
    stops it at the end."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=30)

"""A fake Slack Web API on 127.0.0.1 (Starlette on uvicorn, in a thread): it records each call
(chat.postMessage, chat.update, chat.postEphemeral, views.open), answers as Slack does (`ok`, a channel and
a ts), and can be made to fail (`down`: 503 to every call) as Slack down would. Also what Slack sends to
an app: signed interactivity requests (`signed`)."""

from __future__ import annotations

import hashlib
import hmac
import json
import socket
import threading
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

BOT_TOKEN = "xoxb-test-token"
SIGNING_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"


@dataclass
class FakeSlack:
    url: str = ""
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    down: bool = False
    refused: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def named(self, method: str) -> list[dict[str, Any]]:
        with self.lock:
            return [args for name, args in self.calls if name == method]

    def wait_for(self, method: str, count: int = 1, timeout: float = 30.0) -> list[dict[str, Any]]:
        """The calls of `method` once there are `count` of them (bounded far above normal times)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.named(method)
            if len(found) >= count:
                return found
            time.sleep(0.05)
        raise AssertionError(f"{count} {method} call(s) expected, got {self.named(method)}")

    async def answer(self, request: Request) -> JSONResponse:
        method = request.path_params["method"]
        if self.down:
            with self.lock:
                self.refused += 1
            return JSONResponse({"ok": False, "error": "service_unavailable"}, status_code=503)
        if request.headers.get("authorization") != f"Bearer {BOT_TOKEN}":
            return JSONResponse({"ok": False, "error": "invalid_auth"})
        raw = await request.body()
        if request.headers.get("content-type", "").startswith("application/json"):
            args = json.loads(raw or b"{}")
        else:
            args = dict(urllib.parse.parse_qsl(raw.decode()))
        with self.lock:
            self.calls.append((method, args))
            count = len(self.calls)
        channel = args.get("channel", "C0APPROVALS")
        return JSONResponse(
            {
                "ok": True,
                "channel": "C0APPROVALS" if channel.startswith("#") else channel,
                "ts": args.get("ts") or f"1700000000.{count:06d}",
            }
        )


@contextmanager
def fake_slack() -> Iterator[FakeSlack]:
    fake = FakeSlack()
    app = Starlette(routes=[Route("/api/{method}", fake.answer, methods=["POST"])])
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.started, "the fake Slack did not start"
    fake.url = f"http://127.0.0.1:{port}/api/"
    try:
        yield fake
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


def signed(
    payload: dict[str, Any], *, timestamp: int | None = None, secret: str = SIGNING_SECRET
) -> tuple[bytes, dict[str, str]]:
    """An interactivity request's body and headers, signed as Slack signs them (v0, HMAC-SHA256)."""
    body = urllib.parse.urlencode({"payload": json.dumps(payload)}).encode()
    stamp = str(int(time.time()) if timestamp is None else timestamp)
    base = b"v0:" + stamp.encode() + b":" + body
    signature = "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()
    headers = {
        "Content-Type": "application/x-www-form-urlencoded",
        "X-Slack-Request-Timestamp": stamp,
        "X-Slack-Signature": signature,
    }
    return body, headers


def click(action_id: str, slack_user: str, which: str = "riverbeam_approve") -> dict[str, Any]:
    """A block_actions payload: `slack_user` clicked Approve (or Reject) on the action's message."""
    return {
        "type": "block_actions",
        "user": {"id": slack_user},
        "trigger_id": f"trigger-{slack_user}",
        "container": {"type": "message", "channel_id": "C0APPROVALS", "message_ts": "1700000000.000001"},
        # each click is a request of its own (Slack's action_ts differs): never a replay of another
        "actions": [
            {"action_id": which, "value": action_id, "type": "button", "action_ts": str(time.time_ns())}
        ],
    }


def reason_submitted(action_id: str, slack_user: str, reason: str) -> dict[str, Any]:
    """The Reject modal submitted with its reason."""
    meta = json.dumps({"action_id": action_id, "channel": "C0APPROVALS", "ts": "1700000000.000001"})
    return {
        "type": "view_submission",
        "user": {"id": slack_user},
        "view": {
            "callback_id": "riverbeam_reject_reason",
            "private_metadata": meta,
            "state": {"values": {"reason": {"reason": {"type": "plain_text_input", "value": reason}}}},
        },
    }

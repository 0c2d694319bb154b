"""What `riverbeam dev` logs, read from the stack's output as a person sees it: one short readable line per
request, per event and per error of its handlers (their Powertools records included, never as JSON), and an
error's traceback only with --debug. The error comes from a model that refuses every call (Bedrock's
ValidationException, served on 127.0.0.1), which the handlers log with its exception."""

from __future__ import annotations

import json
import re
import time
import uuid
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from riverbeam_local.clients.dev_process import DevProcess, running

from tests.support.devstack import TIMEOUT_SECONDS, http
from tests.support.fake_bedrock import ENDPOINT_VARIABLE, serving
from tests.support.hostile_agent import AGENTS_YAML

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

TIME = r"\d\d:\d\d:\d\d "
MODEL_FAILURE = re.compile(
    TIME
    + r"ERROR riverbeam\.bedrock\.model: the model call failed function_name=riverbeam-local-InvokeFunction"
    r" model_id=\S+ code=ValidationException"
    r" \(ValidationException: .*the model refuses this request\)$"
)
# what the stack prints once, when it is ready
READY_LINES = ("HTTP API:", "WebSocket API:", "Management API:", "Inbox page:", "DynamoDB:", "SQS:", "S3:")
READY_LINES += ("EventBridge:", "AWS env file:", "Channels:", "Data dir:", "Ready")
# far above any line the stack means to write, far below a traceback of several KB
LONGEST_LINE = 600


class _Refusing(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        body = json.dumps({"message": "the model refuses this request"}).encode()
        self.send_response(400)
        self.send_header("x-amzn-ErrorType", "ValidationException")
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: Any) -> None:
        pass


def run_a_failing_model(data_dir: Path, *flags: str) -> list[str]:
    """Start the stack on the refusing model, invoke, wait for the failure to be logged, stop: the lines it
    wrote after it was ready (stdout and stderr)."""
    agents = data_dir.parent / f"{data_dir.name}-agents.yaml"
    agents.write_text(AGENTS_YAML)
    with serving(_Refusing) as url:
        args = ("--agents", str(agents), "--model", "bedrock", *flags)
        with running(data_dir, args=args, env={ENDPOINT_VARIABLE: url}) as dev:
            ready = len(dev.stderr)
            status, answer = invoke(dev)
            assert (status, answer["error"]["code"]) == (502, "BEM-346"), answer
            wait_for(dev, "the model call failed")
    return [line.rstrip("\n") for line in dev.stderr[ready:] + dev.stdout if not line.startswith(READY_LINES)]


def invoke(dev: DevProcess) -> tuple[int, Any]:
    body = {
        "agent_name": "author",
        "session_id": str(uuid.uuid4()),
        "content": [{"type": "text", "text": "Hello"}],
        "stream": False,
        "auth_context": {"user_id": "u1"},
    }
    return http(dev, "POST", "/invoke", body)


def wait_for(dev: DevProcess, text: str) -> None:
    deadline = time.monotonic() + TIMEOUT_SECONDS
    while text not in dev.stderr_text() + "".join(dev.stdout):
        assert time.monotonic() < deadline, dev.stderr_text()
        time.sleep(0.1)


def test_every_line_is_short_and_readable_and_an_error_is_one_line(tmp_path: Path) -> None:
    lines = run_a_failing_model(tmp_path / "dev")
    assert any(re.fullmatch(TIME + r"POST /invoke 502 \d+ ms", line) for line in lines), lines
    assert [line for line in lines if MODEL_FAILURE.fullmatch(line)], lines
    for line in lines:
        assert re.match(TIME + r"\S", line), line  # a time, then what happened: no JSON, no traceback
        assert len(line) <= LONGEST_LINE, line
    assert not any("Traceback" in line or line.lstrip().startswith("{") for line in lines)


def test_debug_gives_the_traceback(tmp_path: Path) -> None:
    lines = run_a_failing_model(tmp_path / "dev", "--debug")
    (failure,) = [i for i, line in enumerate(lines) if MODEL_FAILURE.fullmatch(line)]
    assert lines[failure + 1] == "Traceback (most recent call last):", lines[failure : failure + 3]
    assert not any(line.lstrip().startswith('{"level"') for line in lines)

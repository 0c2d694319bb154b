"""`riverbeam dev` storing and serving content too large for one DynamoDB item: its `author` on a scripted
Bedrock model (tests.support.fake_bedrock) calls a tool of the test's (tests.support.large_content:dump,
600 KB of output) and then replies with 600 KB of text. Through the stack's HTTP API every read returns
them whole, its embedded S3 holds them (no table item over 400 KB), its WebSocket pushes every frame in
messages API Gateway would take, and a restart on the same data dir keeps them."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from pathlib import Path
from typing import Any

from riverbeam_local.clients.dev_process import DevProcess, running
from websockets.asyncio.client import connect

from tests.support.bedrock import text_events, tool_events
from tests.support.devstack import TIMEOUT_SECONDS, http, secret_of
from tests.support.fake_bedrock import ENDPOINT_VARIABLE, fake_bedrock, tool_results
from tests.support.large_content import REPLY, TOOL_OUTPUT

MODEL = "anthropic.claude-3-5-haiku-20241022-v1:0"
AGENTS_YAML = f"agents:\n  author:\n    model_id: {MODEL}\n    tools: ['tests.support.large_content:dump']\n"
DYNAMODB_ITEM_LIMIT = 400 * 1024
API_GATEWAY_MESSAGE_LIMIT = 128 * 1024


def script(request: dict[str, Any]) -> list[dict[str, Any]]:
    """Dump the log first; once its output is back, the long reply, streamed in 10 KB chunks."""
    if tool_results(request):
        return text_events(*(REPLY[i : i + 10_000] for i in range(0, len(REPLY), 10_000)))
    return tool_events((f"tooluse_{uuid.uuid4().hex}", "dump", [json.dumps({"name": "log"})]))


def _wait_ended(dev: DevProcess, run_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + TIMEOUT_SECONDS
    while True:
        status, run = http(dev, "GET", f"/runs/{run_id}?user_id=u1")
        assert status == 200, run
        if run["status"] != "running":
            return dict(run)
        assert time.monotonic() < deadline, "the run did not end"
        time.sleep(0.2)


def _reads(dev: DevProcess, session_id: str, action_id: str, run_id: str) -> None:
    status, listed = http(dev, "GET", f"/sessions/{session_id}/messages?user_id=u1")
    assert status == 200, listed
    parts = [p for m in listed["messages"] for p in m["content"]]
    assert [p["output"] for p in parts if p["type"] == "tool_result"] == [
        {"name": "log", "text": TOOL_OUTPUT}
    ]
    assert listed["messages"][-1]["content"] == [{"type": "text", "text": REPLY}]
    status, action = http(dev, "GET", f"/actions/{action_id}?user_id=u1")
    assert status == 200 and action["outcome"]["output"]["text"] == TOOL_OUTPUT
    status, frames = http(dev, "GET", f"/runs/{run_id}/frames?user_id=u1")
    assert status == 200
    assert [f["output"]["text"] for f in frames["frames"] if f["type"] == "tool_result"] == [TOOL_OUTPUT]
    assert frames["frames"][-1]["result"]["content"] == [{"type": "text", "text": REPLY}]


def _snapshot_items(data_dir: Path) -> list[dict[str, Any]]:
    return list(json.loads((data_dir / "records.json").read_text())["items"])


def test_the_local_stack_stores_and_serves_a_600_kb_tool_output_and_reply(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    agents = tmp_path / "agents.yaml"
    agents.write_text(AGENTS_YAML)
    args = ("--agents", str(agents), "--model", "bedrock")
    with fake_bedrock(script) as url:
        with running(data_dir, args=args, env={ENDPOINT_VARIABLE: url}) as dev:
            assert dev.urls["S3"].endswith("(embedded), bucket riverbeam-local-content"), dev.urls
            body = {
                "agent_name": "author",
                "session_id": str(uuid.uuid4()),
                "content": [{"type": "text", "text": "dump the log"}],
                "auth_context": {"user_id": "u1"},
            }
            status, asked = http(dev, "POST", "/invoke", body)
            assert status == 200 and asked["interrupted"], asked
            (action,) = asked["action_required"]
            resume = {
                **{k: asked[k] for k in ("agent_name", "session_id", "interaction_id")},
                "auth_context": {"user_id": "u1"},
                "actions": [
                    {
                        "action_id": action["action_id"],
                        "kind": "confirmation",
                        "request_id": str(uuid.uuid4()),
                        "status": "submitted",
                    }
                ],
            }

            async def resumed() -> tuple[Any, list[str]]:
                url = (
                    f"{dev.websocket_url}?session_id={asked['session_id']}&user_id=u1&secret={secret_of(dev)}"
                )
                async with connect(url, max_size=None) as socket:
                    status, ack = await asyncio.to_thread(http, dev, "POST", "/resume", resume)
                    assert status == 202, ack
                    found: list[str] = []
                    deadline = time.monotonic() + TIMEOUT_SECONDS
                    while time.monotonic() < deadline:
                        message = str(await asyncio.wait_for(socket.recv(), TIMEOUT_SECONDS))
                        found.append(message)
                        if json.loads(message)["type"] == "done":
                            return ack, found
                raise AssertionError("no done frame came")

            ack, pushed = asyncio.run(resumed())
            assert _wait_ended(dev, ack["run_id"])["status"] == "completed"
            _reads(dev, asked["session_id"], action["action_id"], ack["run_id"])

            # every message on the socket within API Gateway's limit; the reply whole from its deltas
            assert max(len(m.encode()) for m in pushed) < API_GATEWAY_MESSAGE_LIMIT
            frames = [json.loads(m) for m in pushed]
            assert "".join(f["text"] for f in frames if f["type"] == "text_delta") == REPLY
            assert {f["type"] for f in frames if f.get("truncated")} == {"tool_result", "done"}

        # stopped: the snapshot's items are all small, and the objects are kept under the data dir
        sizes = [sum(len(k) + len(json.dumps(v)) for k, v in i.items()) for i in _snapshot_items(data_dir)]
        assert max(sizes) < DYNAMODB_ITEM_LIMIT
        kept = sorted(p.relative_to(data_dir / "content").parts[0] for p in (data_dir / "content").rglob("*"))
        assert {"messages", "actions", "frames"} <= set(kept)

        # a restart on the same data dir reads them all back whole
        with running(data_dir, args=args, env={ENDPOINT_VARIABLE: url}) as dev:
            _reads(dev, asked["session_id"], action["action_id"], ack["run_id"])

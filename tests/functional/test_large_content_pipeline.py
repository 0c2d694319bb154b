"""A tool output and a model reply of 600 KB each (more than one DynamoDB item holds) through the pipeline
on every store, and through the handlers with the template's content bucket on moto's S3: stored, read back
whole by every read, pushed to the WebSocket in frames API Gateway takes, and no item over 400 KB. Without
a content bucket such a run fails BEM-002, naming the limit, and nothing of it is half written."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from beam_store import BeamStore, DynamoBeamStore, TextPart, ToolResultPart
from riverbeam import AgentResult, RiverBeam, StreamAck
from riverbeam.aws import runtime

from tests.support.agents import invoke_body, resume_body
from tests.support.lambda_stack import Stack, http_event, lambda_stack
from tests.support.large_content import AGENT, REPLY, TOOL_OUTPUT, big_runner
from tests.support.stores import REGION

DYNAMODB_ITEM_LIMIT = 400 * 1024
API_GATEWAY_MESSAGE_LIMIT = 128 * 1024
RUN_SECONDS = 120


def item_sizes(client: Any, table: str) -> dict[str, int]:
    """Each item's size measured apart from the store's code: names plus the values' JSON (an upper bound
    of DynamoDB's count)."""
    sizes, start = {}, None
    while True:
        page = client.scan(TableName=table, **({"ExclusiveStartKey": start} if start else {}))
        for item in page["Items"]:
            size = sum(len(k.encode()) + len(json.dumps(v).encode()) for k, v in item.items())
            sizes[f"{item['pk']['S']} {item['sk']['S']}"] = size
        start = page.get("LastEvaluatedKey")
        if not start:
            return sizes


def wait_ended(beam: RiverBeam, run_id: str, user: str = "u1") -> None:
    deadline = time.monotonic() + RUN_SECONDS
    while beam.read_run(run_id, user_id=user).status == "running":
        assert time.monotonic() < deadline, "the run did not end"
        time.sleep(0.05)


def test_a_600_kb_tool_output_and_reply_are_stored_and_read_whole(store: BeamStore) -> None:
    beam = RiverBeam(store)
    beam.register_agent(AGENT, big_runner())
    asked = beam.invoke(invoke_body(text="dump the log") | {"agent_name": AGENT})
    assert isinstance(asked, AgentResult) and asked.interrupted
    ack = beam.resume(resume_body(asked) | {"agent_name": AGENT})
    assert isinstance(ack, StreamAck)
    wait_ended(beam, ack.run_id)
    assert beam.read_run(ack.run_id, user_id="u1").status == "completed"

    messages = beam.read_messages(ack.session_id, user_id="u1")
    (tool,) = [p for m in messages for p in m.content if isinstance(p, ToolResultPart)]
    assert tool.output == {"name": "log", "text": TOOL_OUTPUT}
    assert messages[-1].role == "ai" and messages[-1].content == [TextPart(text=REPLY)]
    action = beam.read_action(asked.action_required[0].action_id or "", user_id="u1")
    assert action.outcome is not None and action.outcome.output == {"name": "log", "text": TOOL_OUTPUT}
    frames = beam.read_frames(ack.run_id, user_id="u1")
    (result,) = [f for f in frames if f["type"] == "tool_result"]
    assert result["output"]["text"] == TOOL_OUTPUT
    assert "".join(f["text"] for f in frames if f["type"] == "text_delta") == REPLY
    assert frames[-1]["result"]["content"] == [{"type": "text", "text": REPLY}]

    if isinstance(store, DynamoBeamStore):
        sizes = item_sizes(store.client, store.table_name)
        assert max(sizes.values()) < DYNAMODB_ITEM_LIMIT, sorted(sizes.items(), key=lambda kv: -kv[1])[:3]


# ---------------------------------------------------------------- through the handlers


@pytest.fixture
def deployed(tmp_path: Path) -> Iterator[tuple[Stack, str]]:
    """The handlers with the template's CONTENT_BUCKET, its bucket on moto's S3, and the agent `big`."""
    bucket = "riverbeam-content"
    agents = "tests.support.large_content:register"
    with lambda_stack(tmp_path, CONTENT_BUCKET=bucket, RIVERBEAM_AGENTS=agents) as stack:
        boto3.client("s3", region_name=REGION).create_bucket(Bucket=bucket)
        yield stack, bucket


def _http(stack: Stack, sample: str, path: str | None = None, body: Any = None, **query: str) -> Any:
    answer = stack.call(sample.split("/")[0], http_event(sample, path=path, body=body, query=query or None))
    return answer["statusCode"], json.loads(answer["body"])


def test_the_handlers_store_large_content_in_the_bucket_and_every_read_returns_it_whole(
    deployed: tuple[Stack, str],
) -> None:
    stack, bucket = deployed
    status, asked = _http(stack, "invoke/http", body=invoke_body(text="dump the log") | {"agent_name": AGENT})
    assert status == 200 and asked["interrupted"], asked
    session_id, action_id = asked["session_id"], asked["action_required"][0]["action_id"]
    connection_id, _ = stack.connect(session_id, "u1")
    status, ack = _http(stack, "resume/http", body=resume_body(asked) | {"agent_name": AGENT})
    assert status == 202, ack  # accepted: the worker runs it
    assert stack.drain() == []

    status, messages = _http(stack, "records/messages", path=f"/sessions/{session_id}/messages", user_id="u1")
    assert status == 200
    parts = [p for m in messages["messages"] for p in m["content"]]
    assert [p["output"] for p in parts if p["type"] == "tool_result"] == [
        {"name": "log", "text": TOOL_OUTPUT}
    ]
    assert messages["messages"][-1]["content"] == [{"type": "text", "text": REPLY}]
    status, action = _http(stack, "records/action", path=f"/actions/{action_id}", user_id="u1")
    assert status == 200 and action["outcome"]["output"]["text"] == TOOL_OUTPUT
    status, frames = _http(stack, "records/frames", path=f"/runs/{ack['run_id']}/frames", user_id="u1")
    assert status == 200
    stored = frames["frames"]
    assert [f["output"]["text"] for f in stored if f["type"] == "tool_result"] == [TOOL_OUTPUT]
    assert stored[-1]["result"]["content"] == [{"type": "text", "text": REPLY}]

    # pushed: every frame within API Gateway's message limit; those too large to push say so, and the
    # text comes whole in deltas
    pushed = stack.pushed(connection_id)
    assert max(len(json.dumps(f, ensure_ascii=False).encode()) for f in pushed) < API_GATEWAY_MESSAGE_LIMIT
    assert [f["frame_seq"] for f in pushed] == [f["frame_seq"] for f in stored]
    truncated = [f for f in pushed if f.get("truncated")]
    assert [(f["type"], f["frame_seq"]) for f in truncated] == [
        (f["type"], f["frame_seq"]) for f in stored if f["type"] in ("tool_result", "done")
    ]
    assert all(f["size"] > API_GATEWAY_MESSAGE_LIMIT for f in truncated)
    assert "".join(f["text"] for f in pushed if f["type"] == "text_delta") == REPLY

    dynamodb = boto3.client("dynamodb", region_name=REGION)
    assert max(item_sizes(dynamodb, stack.table_name).values()) < DYNAMODB_ITEM_LIMIT
    keys = [
        o["Key"] for o in boto3.client("s3", region_name=REGION).list_objects_v2(Bucket=bucket)["Contents"]
    ]
    assert {k.split("/")[0] for k in keys} == {"messages", "actions", "frames"}


def test_without_a_content_bucket_a_reply_too_large_for_an_item_fails_its_run_naming_the_limit(
    tmp_path: Path,
) -> None:
    with lambda_stack(tmp_path, RIVERBEAM_AGENTS="tests.support.large_content:register") as stack:
        beam = runtime.beam()
        asked = beam.invoke(invoke_body(text="dump the log") | {"agent_name": AGENT})
        assert isinstance(asked, AgentResult)
        ack = beam.resume(resume_body(asked) | {"agent_name": AGENT})
        assert isinstance(ack, StreamAck)
        assert stack.drain() == []
        run = beam.read_run(ack.run_id, user_id="u1")
        assert run.status == "failed" and run.error is not None
        assert run.error.code == "BEM-002"
        assert "bytes as stored; the limit is 409600 bytes without a content bucket" in run.error.message
        # the closing write is whole or not at all: no message, no item, over DynamoDB's limit
        messages = beam.read_messages(ack.session_id, user_id="u1")
        assert all(len(m.model_dump_json()) < DYNAMODB_ITEM_LIMIT for m in messages)
        dynamodb = boto3.client("dynamodb", region_name=REGION)
        assert max(item_sizes(dynamodb, stack.table_name).values()) < DYNAMODB_ITEM_LIMIT

"""Hostile requests through the handlers, as a client of the deployment sends them: each is refused with
the contract's error JSON (a BEM code, its status, the field named, a short message) and writes nothing."""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from riverbeam.aws import runtime
from riverbeam.pipeline import limits

from tests.support.agents import invoke_body, resume_body
from tests.support.lambda_stack import Stack, http_event, lambda_stack, resources_of, ws_event
from tests.support.stores import snapshot

MAX_ERROR_BODY = 64 * 1024


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[Stack]:
    with lambda_stack(tmp_path) as s:
        yield s


def interrupted(stack: Stack) -> dict[str, Any]:
    answer = stack.call("invoke", http_event("invoke/http", body=invoke_body()))
    assert answer["statusCode"] == 200, answer
    result: dict[str, Any] = json.loads(answer["body"])
    assert result["interrupted"]
    return result


def refused(stack: Stack, function: str, e: dict[str, Any], code: str, status: int) -> dict[str, Any]:
    """The handler answers `code` with `status` in the contract's JSON, small, and writes nothing."""
    before = snapshot(runtime.beam().store)
    answer = stack.call(function, e)
    assert answer["statusCode"] == status, answer["body"][:500]
    assert len(answer["body"].encode()) < MAX_ERROR_BODY
    error: dict[str, Any] = json.loads(answer["body"])["error"]
    assert set(error) == {"code", "message", "request_id"}
    assert error["code"] == code, error
    assert error["request_id"] == e["requestContext"]["requestId"]
    assert snapshot(runtime.beam().store) == before
    assert stack.queued() == 0
    return error


# 1. what would make a stored item (or the queued job) too large is refused at the door: 413 BEM-002


@pytest.mark.parametrize("parts", [100_000, 20_000, limits.MAX_CONTENT_PARTS + 1])
def test_too_many_tiny_parts_are_413_naming_the_limit(stack: Stack, parts: int) -> None:
    body = invoke_body(content=[{"type": "text", "text": "x"}] * parts)
    error = refused(stack, "invoke", http_event("invoke/http", body=body), "BEM-002", 413)
    limit = limits.MAX_BODY_BYTES if parts == 100_000 else limits.MAX_CONTENT_PARTS
    assert f"the limit is {limit}" in error["message"], error


def test_text_whose_stored_form_is_over_the_limit_is_413(stack: Stack) -> None:
    # 150,000 bytes of text, but every quote is escaped where it is stored: 300,000 bytes of JSON
    body = invoke_body(content=[{"type": "text", "text": '"' * 150_000}])
    error = refused(stack, "invoke", http_event("invoke/http", body=body), "BEM-002", 413)
    assert str(limits.MAX_CONTENT_BYTES) in error["message"]


def test_a_body_over_a_mebibyte_is_413_before_it_is_parsed(stack: Stack) -> None:
    body = json.dumps(invoke_body(padding="x" * (limits.MAX_BODY_BYTES + 1)))
    error = refused(stack, "invoke", http_event("invoke/http", body=body), "BEM-002", 413)
    assert str(limits.MAX_BODY_BYTES) in error["message"]


def test_an_owner_id_too_long_to_key_is_413(stack: Stack) -> None:
    body = invoke_body(auth_context={"user_id": "u" * (limits.MAX_IDENTITY_BYTES + 1)})
    refused(stack, "invoke", http_event("invoke/http", body=body), "BEM-002", 413)


@pytest.mark.parametrize(
    "envelope, field",
    [
        ({"payload": {"tool": "git_push", "args": {"ref": "x" * (limits.MAX_ARGS_BYTES + 1)}}}, "args"),
        ({"status": "cancelled", "reason": "no" * limits.MAX_REASON_BYTES}, "reason"),
    ],
)
def test_resume_args_or_reason_over_the_limit_are_413(
    stack: Stack, envelope: dict[str, Any], field: str
) -> None:
    body = resume_body(interrupted(stack), **envelope)
    error = refused(stack, "resume", http_event("resume/http", body=body), "BEM-002", 413)
    assert field in error["message"]


def test_the_largest_accepted_input_runs_through_the_queue(stack: Stack) -> None:
    """Just under every limit: accepted, queued, run by the worker and stored whole."""
    part = "é" * ((limits.MAX_CONTENT_BYTES - 4096) // (2 * limits.MAX_CONTENT_PARTS))
    content = [{"type": "text", "text": part}] * limits.MAX_CONTENT_PARTS
    body = invoke_body(content=content, stream=True)
    answer = stack.call("invoke", http_event("invoke/http_stream", body=body))
    assert answer["statusCode"] == 202, answer["body"][:500]
    ack = json.loads(answer["body"])
    assert stack.drain() == []
    stored = runtime.beam().store.list_messages(ack["session_id"])
    assert [p.model_dump() for p in stored[0].content] == content
    run = runtime.beam().store.get_run(ack["run_id"])
    assert run is not None and run.status == "completed"


def test_a_queue_message_over_a_limit_fails_alone_with_bem002(
    stack: Stack, caplog: pytest.LogCaptureFixture
) -> None:
    body = invoke_body(content=[{"type": "text", "text": "x"}] * (limits.MAX_CONTENT_PARTS + 1))
    stack.sqs.send_message(QueueUrl=stack.queue_url, MessageBody=json.dumps(body), MessageGroupId="g")
    records = stack.receive()
    before = snapshot(runtime.beam().store)
    answer = stack.call("worker", {"Records": records})
    assert answer["batchItemFailures"] == [{"itemIdentifier": records[0]["messageId"]}]
    assert any("BEM-002" in r.getMessage() or "BEM-002" in str(r.__dict__) for r in caplog.records)
    assert snapshot(runtime.beam().store) == before


# 2. a refusal's message is bounded, whatever the body held


def test_twenty_thousand_unknown_keys_get_a_short_bem001(stack: Stack) -> None:
    body = invoke_body(**{f"k{i}": 0 for i in range(20_000)})
    error = refused(stack, "invoke", http_event("invoke/http", body=body), "BEM-001", 400)
    assert len(error["message"]) < 2000
    assert "k0" in error["message"] and "19995 more" in error["message"]


def test_two_hundred_thousand_unknown_keys_get_a_short_answer(stack: Stack) -> None:
    body = invoke_body(**{f"k{i}": 0 for i in range(200_000)})
    refused(stack, "invoke", http_event("invoke/http", body=body), "BEM-002", 413)


def test_a_huge_unknown_route_is_a_short_bem010(stack: Stack) -> None:
    e = http_event("records/session", query={"user_id": "u1"}, path="/" + "x" * 100_000)
    error = refused(stack, "records", e, "BEM-010", 404)
    assert len(error["message"]) <= 2000


# 3. a malformed auth_context (AuthMode none) is the request's fault: 400 BEM-001 naming the field


@pytest.mark.parametrize(
    "auth_context, field",
    [
        ({"user_id": "u1", "profile_id": True}, "auth_context.profile_id"),
        ({"user_id": "u1", "profile_id": {}}, "auth_context.profile_id"),
        ({"user_id": "u1", "role": "admin"}, "auth_context.role"),
        ({"user_id": 7}, "auth_context.user_id"),
        ("u1", "auth_context"),
    ],
)
def test_a_malformed_auth_context_is_bem001_naming_the_field(
    stack: Stack, auth_context: Any, field: str
) -> None:
    body = invoke_body(auth_context=auth_context)
    error = refused(stack, "invoke", http_event("invoke/http", body=body), "BEM-001", 400)
    assert field in error["message"]
    first = interrupted(stack)
    body = resume_body(first) | {"auth_context": auth_context}
    error = refused(stack, "resume", http_event("resume/http", body=body), "BEM-001", 400)
    assert field in error["message"]


def test_with_jwt_the_bodys_auth_context_is_ignored(tmp_path: Path) -> None:
    with lambda_stack(tmp_path, auth_mode="jwt", JWT_ISSUER="https://issuer.example") as stack:
        body = invoke_body(auth_context={"user_id": "admin", "role": "admin", "profile_id": True})
        answer = stack.call("invoke", http_event("invoke/http", body=body, sub="u7"))
        assert answer["statusCode"] == 200, answer["body"]
        session = runtime.beam().store.get_session(body["session_id"])
        assert session is not None and session.user_id == "u7"


# 7. a body API Gateway base64-encoded is decoded as it means


def test_a_base64_body_is_decoded(stack: Stack) -> None:
    e = http_event("invoke/http", body=base64.b64encode(json.dumps(invoke_body()).encode()).decode())
    e["isBase64Encoded"] = True
    answer = stack.call("invoke", e)
    assert answer["statusCode"] == 200, answer["body"]
    assert json.loads(answer["body"])["interrupted"]


def test_plain_json_marked_base64_is_bem001(stack: Stack) -> None:
    e = http_event("invoke/http", body=invoke_body())
    e["isBase64Encoded"] = True
    refused(stack, "invoke", e, "BEM-001", 400)


def test_a_base64_websocket_message_is_decoded(stack: Stack) -> None:
    session_id = str(uuid.uuid4())
    connection_id, _ = stack.connect(session_id, "u1")
    e = ws_event("invoke/websocket", connection_id=connection_id)
    e["body"] = base64.b64encode(json.dumps(invoke_body(session_id) | {"action": "invoke"}).encode()).decode()
    e["isBase64Encoded"] = True
    answer = stack.call("invoke", e)
    assert answer["statusCode"] == 202, answer["body"]
    assert stack.drain() == []


def test_the_queues_carry_the_largest_accepted_body() -> None:
    """A producer's message may be as large as a body; a job carries at most its content. The queues that
    carry requests: the job queue and the dead-letter queue its redrive moves them to (the events' dead-letter
    queue gets a stream batch's description, a few hundred bytes)."""
    queues = resources_of("AWS::SQS::Queue")
    (jobs,) = [q["Properties"] for q in queues.values() if "RedrivePolicy" in q["Properties"]]
    dead = str(jobs["RedrivePolicy"]["deadLetterTargetArn"]["Fn::GetAtt"]).split(".")[0]
    for props in (jobs, queues[dead]["Properties"]):
        assert props["MaximumMessageSize"] >= limits.MAX_BODY_BYTES

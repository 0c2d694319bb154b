"""Retries are safe through the handlers of functions/ (HTTP and WebSocket routes), over moto on the
template's table and queues: a request sent again with its request_id gets the first answer, puts no
second job on the queue and runs nothing twice; the 409s answer the contract's JSON."""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from beam_store import DynamoBeamStore, RequestRecord
from riverbeam.aws import runtime
from riverbeam.models import InvokeRequest
from riverbeam.pipeline.retries import request_sha256

from tests.support.agents import invoke_body, resume_body
from tests.support.lambda_stack import Stack, http_event, lambda_stack, ws_event


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[Stack]:
    with lambda_stack(tmp_path) as s:
        yield s


@pytest.fixture
def jobs_sent(stack: Stack, monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Every job the handlers put on the queue (SQS itself would drop a resend of one run's job)."""
    sent: list[dict[str, Any]] = []
    sqs = runtime.sqs()
    real = sqs.send_message

    def counted(**params: Any) -> Any:
        sent.append(json.loads(params["MessageBody"]))
        return real(**params)

    monkeypatch.setattr(sqs, "send_message", counted)
    return sent


def store() -> DynamoBeamStore:
    found = runtime.beam().store
    assert isinstance(found, DynamoBeamStore)
    return found


def body_of(answer: dict[str, Any]) -> Any:
    return json.loads(answer["body"])


def post(stack: Stack, route: str, body: dict[str, Any]) -> dict[str, Any]:
    return stack.call(route, http_event(f"{route}/http", body=body))


def interrupted(stack: Stack) -> dict[str, Any]:
    answer = post(stack, "invoke", invoke_body(str(uuid.uuid4()), request_id=str(uuid.uuid4())))
    assert answer["statusCode"] == 200
    result = body_of(answer)
    assert result["interrupted"]
    return result  # type: ignore[no-any-return]


def pushes(data_dir: Path, branch: str) -> int:
    """The commits the bare remote has on `branch` (0: never pushed)."""
    found = subprocess.run(
        ["git", "-C", str(data_dir / "remote.git"), "rev-list", "--count", branch],
        capture_output=True,
        text=True,
        timeout=60,
    )
    return int(found.stdout.strip()) if found.returncode == 0 else 0


def test_a_non_streamed_invoke_sent_again_gets_the_same_result(stack: Stack) -> None:
    body = invoke_body(str(uuid.uuid4()), request_id=str(uuid.uuid4()))
    first, again = post(stack, "invoke", body), post(stack, "invoke", body)
    assert first["statusCode"] == again["statusCode"] == 200
    assert again["body"] == first["body"]
    result = body_of(first)
    assert [r.run_id for r in store().list_runs(result["interaction_id"])] == [result["run_id"]]
    assert [m.role for m in store().list_messages(body["session_id"])] == ["human", "ai"]


def test_a_streamed_invoke_sent_again_queues_one_job(stack: Stack, jobs_sent: list[dict[str, Any]]) -> None:
    session_id = str(uuid.uuid4())
    connection, _ = stack.connect(session_id, "u1")
    body = invoke_body(session_id, request_id=str(uuid.uuid4()), stream=True)
    first = stack.call("invoke", http_event("invoke/http_stream", body=body))
    again = stack.call("invoke", http_event("invoke/http_stream", body=body))
    by_socket = stack.call(  # the WebSocket route forces `stream`: the same request
        "invoke",
        ws_event(
            "invoke/websocket",
            connection_id=connection,
            body={"action": "invoke", **{k: v for k, v in body.items() if k != "auth_context"}},
        ),
    )
    assert first["statusCode"] == again["statusCode"] == by_socket["statusCode"] == 202
    assert body_of(again) == body_of(by_socket) == body_of(first)
    assert [j["job"]["run_id"] for j in jobs_sent] == [body_of(first)["run_id"]]
    assert stack.drain() == []
    frames = stack.pushed(connection)
    assert {f["run_id"] for f in frames} == {body_of(first)["run_id"]}
    assert [f["type"] for f in frames].count("done") == 1


def test_a_resume_sent_again_queues_one_job_and_pushes_once(
    stack: Stack, tmp_path: Path, jobs_sent: list[dict[str, Any]]
) -> None:
    result = interrupted(stack)
    body = resume_body(result, request_id=str(uuid.uuid4()))
    first, again = post(stack, "resume", body), post(stack, "resume", body)
    assert first["statusCode"] == again["statusCode"] == 202
    assert body_of(again) == body_of(first)
    assert [j["job"]["run_id"] for j in jobs_sent] == [body_of(first)["run_id"]]
    assert stack.drain() == []
    after = post(stack, "resume", body)  # after its run ended, too
    assert after["statusCode"] == 202 and body_of(after) == body_of(first) and len(jobs_sent) == 1
    assert pushes(tmp_path, "docs/update") == 2  # pushed once: the work tree's two commits
    action = store().get_action(result["action_required"][0]["action_id"])
    assert action is not None and action.outcome is not None and action.outcome.status == "ok"


def test_the_409s_answer_the_contracts_json(stack: Stack) -> None:
    body = invoke_body(str(uuid.uuid4()), request_id=str(uuid.uuid4()))
    assert post(stack, "invoke", body)["statusCode"] == 200
    e = http_event("invoke/http", body={**body, "content": [{"type": "text", "text": "Push main"}]})
    other = stack.call("invoke", e)
    assert other["statusCode"] == 409
    error = body_of(other)["error"]
    assert error["code"] == "BEM-043" and error["request_id"] == e["requestContext"]["requestId"]
    assert "request_id" in error["message"]

    # another instance is answering this very request right now
    busy = invoke_body(str(uuid.uuid4()), request_id=str(uuid.uuid4()))
    held = RequestRecord(
        user_id="u1",
        request_id=busy["request_id"],
        request_sha256=request_sha256(InvokeRequest.model_validate(busy)),
        status="in_progress",
        claim_id=str(uuid.uuid4()),
        created_at="2026-12-04T00:00:00.000000Z",
        lease_expires_at=2**40,
        expires_at=2**40,
    )
    assert store().claim_request(held, 0) is None
    answer = post(stack, "invoke", busy)
    assert answer["statusCode"] == 409 and body_of(answer)["error"]["code"] == "BEM-044"
    assert store().get_session(busy["session_id"]) is None  # it started nothing


def test_a_job_the_queue_refused_frees_its_request_id(stack: Stack, monkeypatch: pytest.MonkeyPatch) -> None:
    body = invoke_body(str(uuid.uuid4()), request_id=str(uuid.uuid4()), stream=True)
    sqs = runtime.sqs()
    real = sqs.send_message

    def refuses(**_: Any) -> Any:
        raise ConnectionError("the queue is unreachable")

    monkeypatch.setattr(sqs, "send_message", refuses)
    refused = stack.call("invoke", http_event("invoke/http_stream", body=body))
    assert refused["statusCode"] == 503 and body_of(refused)["error"]["code"] == "BEM-503"
    monkeypatch.setattr(sqs, "send_message", real)
    retried = stack.call("invoke", http_event("invoke/http_stream", body=body))
    assert retried["statusCode"] == 202 and stack.queued() == 1
    ack = body_of(retried)
    runs = store().list_runs(ack["interaction_id"])
    assert [r.run_id for r in runs] == [ack["run_id"]]
    assert stack.drain() == []
    run = store().get_run(ack["run_id"])
    assert run is not None and run.status == "interrupted"


def test_two_queue_messages_with_one_request_id_run_once(stack: Stack) -> None:
    session_id = str(uuid.uuid4())
    body = invoke_body(session_id, text="Hello", request_id=str(uuid.uuid4()))
    for _ in range(2):  # a producer that sent it again: another message (deduplicated by id, not content)
        stack.sqs.send_message(
            QueueUrl=stack.queue_url,
            MessageBody=json.dumps(body),
            MessageGroupId=session_id,
            MessageDeduplicationId=str(uuid.uuid4()),
        )
    assert stack.queued() == 2
    assert stack.drain() == []
    assert stack.queued() == 0
    stored = store().list_messages(session_id)
    assert [m.role for m in stored] == ["human", "ai"]
    assert len({m.run_id for m in stored}) == 1

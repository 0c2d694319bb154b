"""The Lambda handlers of functions/, called with the samples of events/ and events built from them, over
moto (DynamoDB, SQS, the API Gateway management API), on the table and queues of template.yaml."""

from __future__ import annotations

import json
import subprocess
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from beam_store import DynamoBeamStore
from beam_store.dynamo import TABLE_DEFINITION
from riverbeam.aws import runtime, worker

from tests.support.crash import ProcessDied
from tests.support.lambda_stack import (
    EVENTS,
    Stack,
    event,
    http_event,
    lambda_stack,
    table_definition,
    ws_event,
)
from tests.support.stores import snapshot

SAMPLE_SESSION = "5f0c3a52-8d6e-4c41-9b7a-2a1d6f3e9c10"
SAMPLE_CONNECTION = "Cz4yLeQjIAMCLOw="

WAIT_SECONDS = 60  # far beyond a step's normal time: bounds a wait on a thread


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[Stack]:
    with lambda_stack(tmp_path) as s:
        yield s


def body_of(answer: dict[str, Any]) -> Any:
    return json.loads(answer["body"])


def store() -> DynamoBeamStore:
    found = runtime.beam().store
    assert isinstance(found, DynamoBeamStore)
    return found


def invoke(session_id: str, text: str = "Push docs/update", **extra: Any) -> dict[str, Any]:
    return {
        "agent_name": "author",
        "session_id": session_id,
        "content": [{"type": "text", "text": text}],
        "auth_context": {"user_id": "u1"},
        **extra,
    }


def resume(result: dict[str, Any], status: str = "submitted") -> dict[str, Any]:
    action = result["action_required"][0]
    return {
        "agent_name": "author",
        "session_id": result["session_id"],
        "interaction_id": result["interaction_id"],
        "actions": [
            {
                "action_id": action["action_id"],
                "kind": "confirmation",
                "request_id": str(uuid.uuid4()),
                "status": status,
                "payload": {"tool": action["tool"], "args": action["args"]},
            }
        ],
    }


def remote_branches(data_dir: Path) -> list[str]:
    if not (data_dir / "remote.git").exists():  # made by the first git tool that runs
        return []
    out = subprocess.run(
        ["git", "-C", str(data_dir / "remote.git"), "for-each-ref", "--format=%(refname:short)"],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.split()


def test_the_test_table_is_the_one_the_store_creates() -> None:
    assert table_definition() == TABLE_DEFINITION


# every sample, in an order that makes each meaningful: what it answers on a new deployment
SAMPLES = [
    ("connections/connect", "connections", 200),
    ("invoke/http", "invoke", 200),
    ("invoke/http_stream", "invoke", 202),
    ("invoke/websocket", "invoke", 202),
    ("resume/http", "resume", 404),  # its action is not one this deployment holds: BEM-027
    ("resume/websocket", "resume", 404),
    ("records/session", "records", 200),
    ("records/messages", "records", 200),
    ("records/actions", "records", 200),
    ("records/interaction", "records", 404),
    ("records/run", "records", 404),
    ("records/frames", "records", 404),
    ("records/action", "records", 404),
    ("records/approvals", "records", 200),  # the approver's inbox (empty here)
    ("records/openapi", "records", 200),
    ("worker/job", "worker", None),
    ("worker/invoke_request", "worker", None),
    ("connections/disconnect", "connections", 200),
    ("sweep/schedule", "sweep", None),
    ("events/outbox_insert", "events", None),  # an outbox item's Approval Requested, put on the bus
]


def test_every_sample_event_is_answered_by_its_handler(stack: Stack) -> None:
    files = sorted(str(p.relative_to(EVENTS).with_suffix("")) for p in EVENTS.rglob("*.json"))
    assert sorted(name for name, _, _ in SAMPLES) == files
    for name, function, status in SAMPLES:
        answer = stack.call(function, event(name))
        if function in ("worker", "events"):
            assert answer == {"batchItemFailures": []}, name
            continue
        if function == "sweep":  # the samples' actions are all in time
            assert answer == {"expired": []}, name
            continue
        assert answer["statusCode"] == status, (name, answer)
        if status >= 400:
            error = body_of(answer)["error"]
            assert error["code"] in ("BEM-027", "BEM-022", "BEM-023") and error["request_id"], name
    assert stack.drain() == []
    # the samples' session belongs to their user, u1, and holds the samples' runs
    session = body_of(stack.call("records", http_event("records/session", query={"user_id": "u1"})))
    assert session["user_id"] == "u1" and session["last_seq"] >= 6
    assert store().get_connection(SAMPLE_CONNECTION) is None  # disconnected last


def test_a_streamed_invoke_pushes_frames_in_order_ending_in_done(stack: Stack) -> None:
    session_id = str(uuid.uuid4())
    connection, answer = stack.connect(session_id, "u1")
    assert answer["statusCode"] == 200
    sent = stack.call("invoke", http_event("invoke/http_stream", body=invoke(session_id, stream=True)))
    assert sent["statusCode"] == 202
    ack = body_of(sent)
    assert ack["session_id"] == session_id and ack["stream"] == "websocket"
    assert stack.pushed(connection) == []  # the worker runs the agent, not the handler

    assert stack.drain() == []
    frames = stack.pushed(connection)
    assert [f["frame_seq"] for f in frames] == list(range(len(frames)))
    assert frames[0]["type"] == "run_started" and frames[-1]["type"] == "done"
    assert {(f["session_id"], f["interaction_id"], f["run_id"]) for f in frames} == {
        (session_id, ack["interaction_id"], ack["run_id"])
    }
    result = frames[-1]["result"]
    assert result["interrupted"] and result["action_required"][0]["tool"] == "git_push"

    # a subscriber that connects late reads them all back, and after a cursor
    path = f"/runs/{ack['run_id']}/frames"
    replay = body_of(stack.call("records", http_event("records/frames", path=path, query={"user_id": "u1"})))
    assert replay["frames"] == frames and replay["next_after"] is None
    after = {"user_id": "u1", "after": "1", "limit": "2"}
    page = body_of(stack.call("records", http_event("records/frames", path=path, query=after)))
    assert page["frames"] == frames[2:4] and page["next_after"] == 3
    other = stack.call("records", http_event("records/frames", path=path, query={"user_id": "u2"}))
    assert other["statusCode"] == 404 and body_of(other)["error"]["code"] == "BEM-023"


def _interrupted(stack: Stack, session_id: str, connection: str) -> dict[str, Any]:
    stack.call(
        "invoke",
        ws_event(
            "invoke/websocket",
            connection_id=connection,
            body={"action": "invoke", **{k: v for k, v in invoke(session_id).items() if k != "auth_context"}},
        ),
    )
    assert stack.drain() == []
    done = stack.pushed(connection)[-1]
    assert done["type"] == "done" and done["result"]["interrupted"]
    return done["result"]  # type: ignore[no-any-return]


def test_a_resume_through_the_websocket_route(stack: Stack, tmp_path: Path) -> None:
    session_id = str(uuid.uuid4())
    connection, _ = stack.connect(session_id, "u1")
    result = _interrupted(stack, session_id, connection)
    seen = len(stack.pushed(connection))

    answer = stack.call(
        "resume",
        ws_event("resume/websocket", connection_id=connection, body={"action": "resume", **resume(result)}),
    )
    assert answer["statusCode"] == 202
    ack = body_of(answer)
    action = store().get_action(result["action_required"][0]["action_id"])
    assert action is not None and action.status == "resolved" and action.outcome is None  # resolved at once
    assert remote_branches(tmp_path) == []  # the tool runs in the worker

    assert stack.drain() == []
    frames = stack.pushed(connection)[seen:]
    assert [f["frame_seq"] for f in frames] == list(range(len(frames)))
    assert {f["run_id"] for f in frames} == {ack["run_id"]}
    assert [f["type"] for f in frames if f["type"] == "tool_result"] == ["tool_result"]
    assert frames[-1]["type"] == "done" and not frames[-1]["result"]["interrupted"]
    assert remote_branches(tmp_path) == ["docs/update"]
    action = store().get_action(action.action_id)
    assert action is not None and action.outcome is not None and action.outcome.status == "ok"

    # the same answer again, through the HTTP route this time: the action is not pending any more
    again = stack.call(
        "resume", http_event("resume/http", body={**resume(result), "auth_context": {"user_id": "u1"}})
    )
    assert again["statusCode"] == 400 and body_of(again)["error"]["code"] == "BEM-066"


def test_a_gone_connection_is_dropped_while_the_others_get_every_frame(stack: Stack) -> None:
    session_id = str(uuid.uuid4())
    first, stale, last = (stack.connect(session_id, "u1")[0] for _ in range(3))
    stack.gone.add(stale)  # its client went away without a $disconnect
    stack.call("invoke", http_event("invoke/http_stream", body=invoke(session_id, stream=True)))
    assert stack.drain() == []
    frames = stack.pushed(first)
    assert frames and frames[-1]["type"] == "done"
    assert stack.pushed(last) == frames
    assert stack.pushed(stale) == []
    assert sorted(c.connection_id for c in store().list_connections(session_id)) == sorted([first, last])


def test_another_users_connect_is_refused(stack: Stack) -> None:
    session_id = str(uuid.uuid4())
    stack.call("invoke", http_event("invoke/http", body=invoke(session_id)))  # u1's session
    connection, answer = stack.connect(session_id, "mallory")
    assert answer["statusCode"] == 403 and body_of(answer)["error"]["code"] == "BEM-031"
    assert store().get_connection(connection) is None

    # a subscriber to a session not created yet owns it: another user's first invoke is refused
    reserved = str(uuid.uuid4())
    assert stack.connect(reserved, "u2")[1]["statusCode"] == 200
    refused = stack.call("invoke", http_event("invoke/http", body=invoke(reserved)))
    assert refused["statusCode"] == 403 and body_of(refused)["error"]["code"] == "BEM-031"
    assert store().list_messages(reserved) == []
    mine = stack.call(
        "invoke", http_event("invoke/http", body={**invoke(reserved), "auth_context": {"user_id": "u2"}})
    )
    assert mine["statusCode"] == 200

    # without a session id or an identity, nobody subscribes
    for query in (
        {"user_id": "u1"},
        {"session_id": "not-a-uuid", "user_id": "u1"},
        {"session_id": session_id},
    ):
        e = ws_event("connections/connect", connection_id="c-x=", **query)
        e["queryStringParameters"] = query
        answer = stack.call("connections", e)
        assert answer["statusCode"] in (400, 401) and body_of(answer)["error"]["code"] in (
            "BEM-001",
            "BEM-030",
        )
    assert store().get_connection("c-x=") is None


def test_a_duplicate_delivery_changes_nothing(stack: Stack, tmp_path: Path) -> None:
    session_id = str(uuid.uuid4())
    connection, _ = stack.connect(session_id, "u1")
    result = _interrupted(stack, session_id, connection)
    stack.call(
        "resume", http_event("resume/http", body={**resume(result), "auth_context": {"user_id": "u1"}})
    )
    (record,) = stack.receive()
    assert stack.run_worker([record]) == []
    assert remote_branches(tmp_path) == ["docs/update"]
    before, pushed = snapshot(store()), len(stack.pushed(connection))

    assert stack.run_worker([record]) == []  # the queue delivers it again (at-least-once)
    assert snapshot(store()) == before
    assert len(stack.pushed(connection)) == pushed
    commits = subprocess.run(
        ["git", "-C", str(tmp_path / "remote.git"), "rev-list", "--count", "docs/update"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert commits.stdout.strip() == "2"  # pushed once: the work tree's two commits

    # a producer's invoke request delivered twice is one run
    stack.sqs.send_message(
        QueueUrl=stack.queue_url,
        MessageBody=json.dumps(invoke(session_id, "Hello")),
        MessageGroupId=session_id,
    )
    (request,) = stack.receive()
    assert stack.run_worker([request]) == []
    before = snapshot(store())
    assert stack.run_worker([request]) == []
    assert snapshot(store()) == before


def test_a_worker_killed_between_claim_and_outcome(
    stack: Stack, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session_id = str(uuid.uuid4())
    connection, _ = stack.connect(session_id, "u1")
    result = _interrupted(stack, session_id, connection)
    seen = len(stack.pushed(connection))
    ack = body_of(
        stack.call(
            "resume", http_event("resume/http", body={**resume(result), "auth_context": {"user_id": "u1"}})
        )
    )

    import riverbeam.tools.gitpush as gitpush

    pushes: list[tuple[Any, ...]] = []
    in_the_tool, woken = threading.Event(), threading.Event()

    def stuck_push(*args: Any, **kwargs: Any) -> Any:
        pushes.append(args)
        in_the_tool.set()
        woken.wait(WAIT_SECONDS)  # the Lambda's time runs out here; its process is frozen, not ended
        raise ProcessDied("the Lambda timed out")

    monkeypatch.setattr(gitpush, "push_branch", stuck_push)
    monkeypatch.setattr(worker, "LEASE_MARGIN_SECONDS", 0)  # its lease ends with its time: at once
    (record,) = stack.receive()
    ended: list[object] = []

    def frozen_worker() -> None:
        try:
            ended.append(stack.call("worker", {"Records": [record]}, remaining_ms=0))
        except BaseException as error:  # what the frozen worker does once it wakes is looked at below
            ended.append(error)

    frozen = threading.Thread(target=frozen_worker)
    frozen.start()
    try:
        assert in_the_tool.wait(WAIT_SECONDS)
        with stack.recorder.by_the_test():
            _after_the_frozen_worker(stack, connection, ack, result, seen, pushes)
            settled = snapshot(store())
    finally:
        woken.set()
        frozen.join(WAIT_SECONDS)
    assert not frozen.is_alive() and len(ended) == 1, ended
    # the frozen worker wakes into a run closed by another: it changes nothing, pushes nothing again
    with stack.recorder.by_the_test():
        assert len(pushes) == 1 and snapshot(store()) == settled


def _after_the_frozen_worker(
    stack: Stack, connection: str, ack: dict[str, Any], result: dict[str, Any], seen: int, pushes: list[Any]
) -> None:
    run = store().get_run(ack["run_id"])
    assert run is not None and run.status == "running" and run.claimed_by  # claimed, never closed

    assert stack.drain() == []  # the message comes back; the next worker finds the lease expired
    assert len(pushes) == 1  # never pushed again
    run = store().get_run(ack["run_id"])
    assert (
        run is not None and run.status == "failed" and run.error is not None and run.error.code == "BEM-504"
    )
    action = store().get_action(result["action_required"][0]["action_id"])
    assert action is not None and action.status == "resolved"
    assert (
        action.outcome is not None
        and action.outcome.error is not None
        and action.outcome.error.code == "BEM-334"
    )
    interaction = store().get_interaction(ack["interaction_id"])
    assert interaction is not None and interaction.status == "failed" and interaction.active_run_id is None
    # the subscriber hears how it ended, numbered after what the dead worker sent
    frames = stack.pushed(connection)[seen:]
    assert [f["frame_seq"] for f in frames] == list(range(len(frames)))
    assert [f["type"] for f in frames][-2:] == ["error", "done"] and frames[-2]["code"] == "BEM-504"
    replay = store().list_frames(ack["run_id"])
    assert replay == frames


def test_a_malformed_message_in_a_batch_of_good_ones(stack: Stack, caplog: pytest.LogCaptureFixture) -> None:
    one, two, three = (str(uuid.uuid4()) for _ in range(3))
    send = stack.sqs.send_message
    send(QueueUrl=stack.queue_url, MessageBody=json.dumps(invoke(one, "Hello")), MessageGroupId=one)
    send(QueueUrl=stack.queue_url, MessageBody="{not json", MessageGroupId=two)
    send(QueueUrl=stack.queue_url, MessageBody=json.dumps(invoke(two, "Hello")), MessageGroupId=two)
    send(QueueUrl=stack.queue_url, MessageBody=json.dumps(invoke(three, "Hello")), MessageGroupId=three)
    records = stack.receive()
    assert len(records) == 4
    failed = stack.run_worker(records)
    # the bad one fails, and the message behind it in its session waits (order per session); others go on
    assert failed == [records[1]["messageId"], records[2]["messageId"]]
    assert [m.role for m in store().list_messages(one)] == ["human", "ai"]
    assert [m.role for m in store().list_messages(three)] == ["human", "ai"]
    assert store().list_messages(two) == []
    assert any(
        r.getMessage() == "queue message failed" and getattr(r, "code", None) == "BEM-001"
        for r in caplog.records
    )

    failed = stack.drain()
    # delivered again up to the queue's maxReceiveCount, then in the dead-letter queue; the next one runs
    assert set(failed) == {records[1]["messageId"]}
    assert stack.queued() == 0
    dead = stack.sqs.receive_message(QueueUrl=stack.dead_letter_url, MaxNumberOfMessages=10)["Messages"]
    assert [m["Body"] for m in dead] == ["{not json"]
    assert [m.role for m in store().list_messages(two)] == ["human", "ai"]


def test_errors_answer_the_contracts_json_and_change_nothing(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    session_id = str(uuid.uuid4())
    e = http_event("invoke/http", body="{not json")
    answer = stack.call("invoke", e)
    assert answer["statusCode"] == 400
    assert body_of(answer) == {
        "error": {
            "code": "BEM-001",
            "message": body_of(answer)["error"]["message"],
            "request_id": e["requestContext"]["requestId"],
        }
    }
    bad_query = http_event("records/frames", query={"user_id": "u1", "after": "-5"})
    answer = stack.call("records", bad_query)
    assert answer["statusCode"] == 400 and body_of(answer)["error"]["code"] == "BEM-001"
    assert "after" in body_of(answer)["error"]["message"]

    # a non-streamed invoke answers the Result
    result = body_of(stack.call("invoke", http_event("invoke/http", body=invoke(session_id))))
    assert result["session_id"] == session_id and result["interrupted"]
    assert result["action_required"][0]["tool"] == "git_push"
    before = snapshot(store())

    # an internal failure tells nothing of itself, and names the request
    def broken(*_: Any, **__: Any) -> Any:
        raise RuntimeError("secret-table-detail")

    monkeypatch.setattr(store(), "get_session_with_messages", broken)
    e = http_event("invoke/http", body=invoke(session_id, "Hello"))
    answer = stack.call("invoke", e)
    assert answer["statusCode"] == 500 and "secret" not in answer["body"]
    assert body_of(answer)["error"] == {
        "code": "BEM-500",
        "message": "internal error",
        "request_id": e["requestContext"]["requestId"],
    }
    monkeypatch.undo()
    assert snapshot(store()) == before


def test_a_job_the_queue_refuses_closes_its_run(stack: Stack, monkeypatch: pytest.MonkeyPatch) -> None:
    session_id = str(uuid.uuid4())
    sqs = runtime.sqs()

    def refused(**_: Any) -> Any:
        raise RuntimeError("queue unavailable")

    monkeypatch.setattr(sqs, "send_message", refused)
    answer = stack.call("invoke", http_event("invoke/http_stream", body=invoke(session_id, stream=True)))
    assert answer["statusCode"] == 503 and body_of(answer)["error"]["code"] == "BEM-503"
    (interaction,) = {m.interaction_id for m in store().list_messages(session_id)}
    (run,) = store().list_runs(interaction)
    assert run.status == "failed" and run.error is not None and run.error.code == "BEM-503"
    found = store().get_interaction(interaction)
    assert found is not None and found.active_run_id is None  # not left busy
    monkeypatch.undo()
    again = stack.call(
        "invoke",
        http_event("invoke/http_stream", body=invoke(session_id, stream=True, interaction_id=interaction)),
    )
    assert again["statusCode"] == 202

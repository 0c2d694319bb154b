"""An unknown error (a store outage, a bug) becomes BEM-500 at the edge that answers, never inside the
pipeline: the WebSocket $connect answers the contract's JSON with its request id and nothing internal, the
worker logs and counts the message failed with BEM-500 (and its traceback) and reports it for redelivery,
and the library's caller gets the error itself. (An HTTP route's BEM-500: test_handlers.py.)"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from beam_store import InMemoryStore
from riverbeam.aws import runtime

from tests.support.agents import author_beam, invoke_body
from tests.support.lambda_stack import Stack, lambda_stack, ws_event
from tests.support.stores import snapshot

SECRET = "secret-table-detail"


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[Stack]:
    with lambda_stack(tmp_path) as s:
        yield s


def _broken(*_: Any, **__: Any) -> Any:
    raise RuntimeError(SECRET)


def test_a_connect_the_store_fails_is_bem500_naming_the_request(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = runtime.beam().store
    monkeypatch.setattr(store, "reserve_session", _broken)
    query = {"session_id": str(uuid.uuid4()), "user_id": "u1"}
    e = ws_event("connections/connect", connection_id="c-down=", **query)
    e["queryStringParameters"] = query
    answer = stack.call("connections", e)
    assert answer["statusCode"] == 500 and SECRET not in answer["body"]
    assert json.loads(answer["body"])["error"] == {
        "code": "BEM-500",
        "message": "internal error",
        "request_id": e["requestContext"]["requestId"],
    }
    assert store.get_connection("c-down=") is None


def test_a_job_the_store_fails_is_logged_bem500_and_delivered_again(
    stack: Stack, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    session_id = str(uuid.uuid4())
    body = json.dumps({**invoke_body(session_id), "stream": True})
    stack.sqs.send_message(QueueUrl=stack.queue_url, MessageBody=body, MessageGroupId=session_id)
    records = stack.receive()
    # the producer's request is accepted in the worker: its opening write fails, before any run exists
    monkeypatch.setattr(runtime.beam().store, "commit", _broken)
    failed = stack.run_worker(records)
    assert failed == [records[0]["messageId"]]
    [told] = [r for r in caplog.records if r.getMessage() == "queue message failed"]
    assert (told.levelname, getattr(told, "code", None)) == ("WARNING", "BEM-500")
    assert SECRET not in getattr(told, "error_message", "")
    [internal] = [r for r in caplog.records if r.getMessage() == "internal error"]
    assert internal.exc_info is not None and SECRET in str(internal.exc_info[1])  # for the operator
    monkeypatch.undo()
    assert stack.run_worker(records) == []  # delivered again, it runs
    assert [m.role for m in runtime.beam().store.list_messages(session_id)] == ["human", "ai"]


def test_the_library_raises_the_stores_own_error_and_writes_nothing() -> None:
    class Down(InMemoryStore):
        def get_session_with_messages(self, session_id: str, *, last: int | None = None) -> Any:
            raise ConnectionError("dynamodb.internal.example:443 refused")

    store = Down()
    beam, _ = author_beam(store)
    with pytest.raises(ConnectionError):
        beam.invoke(invoke_body())
    assert snapshot(store) == snapshot(InMemoryStore())

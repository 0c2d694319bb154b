"""The approval inbox and the audit read over the HTTP API (the records function, on moto)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.functional.test_handlers import body_of, invoke, resume
from tests.support.lambda_stack import Stack, http_event, lambda_stack


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[Stack]:
    with lambda_stack(tmp_path) as s:
        yield s


def test_the_inbox_and_the_audit_read_over_http(stack: Stack) -> None:
    session_id = str(uuid.uuid4())
    answer = stack.call("invoke", http_event("invoke/http", body=invoke(session_id)))
    result = body_of(answer)
    asked = result["action_required"][0]
    assert len(asked["args_sha256"]) == 64

    def inbox(query: dict[str, str], user: str = "u1") -> tuple[int, dict[str, object]]:
        path, query = f"/sessions/{session_id}/actions", {**query, "user_id": user}
        got = stack.call("records", http_event("records/actions", path=path, query=query, sub=user))
        return got["statusCode"], body_of(got)

    status, page = inbox({"status": "pending"})
    assert status == 200 and page["next_after"] is None
    assert [(a["action_id"], a["args_sha256"]) for a in page["actions"]] == [  # type: ignore[union-attr]
        (asked["action_id"], asked["args_sha256"])
    ]
    assert inbox({"status": "approved"})[1]["error"]["code"] == "BEM-001"  # type: ignore[index]
    assert inbox({}, user="u2")[1]["error"]["code"] == "BEM-020"  # type: ignore[index]

    body = resume(result) | {"auth_context": {"user_id": "u1"}}
    body["actions"][0]["args_sha256"] = asked["args_sha256"]
    assert stack.call("resume", http_event("resume/http", body=body))["statusCode"] == 202
    assert stack.drain() == []
    assert inbox({"status": "pending"})[1]["actions"] == []
    status, page = inbox({"status": "resolved", "limit": "1"})
    assert status == 200 and page["next_after"] is not None
    path = f"/actions/{asked['action_id']}"
    audit = body_of(stack.call("records", http_event("records/action", path=path, query={"user_id": "u1"})))
    assert audit["status"] == "resolved" and audit["response"]["args_sha256"] == asked["args_sha256"]
    assert audit["run_args_sha256"] == asked["args_sha256"] and audit["outcome"]["status"] == "ok"

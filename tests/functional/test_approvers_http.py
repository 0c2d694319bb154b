"""Approvers over the HTTP API, as deployed (the functions on moto, agents.yaml naming git_push's approvers):
two of the ops group approve a push the requester may not approve, the votes answered 202 without a run;
the approver's inbox in one Query; what an approver may read."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.functional.test_handlers import body_of, invoke, resume, store
from tests.support.lambda_stack import Stack, http_event, lambda_stack

AGENTS = """
agents:
  author:
    tools: [git_push]
    tool_settings:
      git_push:
        approvers: {users: [ana], groups: [ops]}
        required: 2
        self_approval: false
"""


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[Stack]:
    agents = tmp_path / "agents.yaml"
    agents.write_text(AGENTS, encoding="utf-8")
    with lambda_stack(tmp_path / "data", RIVERBEAM_AGENTS_FILE=str(agents)) as s:
        yield s


def _read(stack: Stack, sample: str, path: str, **query: str) -> tuple[int, Any]:
    got = stack.call("records", http_event(sample, path=path, query=query, sub=query.get("user_id")))
    return got["statusCode"], body_of(got)


def _vote(
    stack: Stack, result: dict[str, Any], user: str, groups: list[str] | None = None
) -> tuple[int, Any]:
    body = resume(result) | {"auth_context": {"user_id": user, **({"groups": groups} if groups else {})}}
    got = stack.call("resume", http_event("resume/http", body=body))
    return got["statusCode"], body_of(got)


def _queries(stack: Stack) -> list[str]:
    """Every DynamoDB Query the functions send from now on."""
    calls: list[str] = []
    store().client.meta.events.register("before-call.dynamodb.Query", lambda **_: calls.append("Query"))
    return calls


def test_two_of_ops_approve_a_push_its_requester_may_not(stack: Stack) -> None:
    session_id = str(uuid.uuid4())
    result = body_of(stack.call("invoke", http_event("invoke/http", body=invoke(session_id))))
    action_id = result["action_required"][0]["action_id"]

    queries = _queries(stack)
    status, inbox = _read(stack, "records/actions", "/approvals", user_id="ana", status="pending")
    assert status == 200 and [a["action_id"] for a in inbox["actions"]] == [action_id]
    assert inbox["actions"][0]["approvals"]["required"] == 2 and inbox["next_cursor"] is None
    assert queries == ["Query"]  # one Query for a caller without groups
    status, inbox = _read(stack, "records/actions", "/approvals", user_id="zed", groups="ops")
    assert [a["action_id"] for a in inbox["actions"]] == [action_id] and len(queries) == 3
    assert _read(stack, "records/actions", "/approvals", user_id="u1")[1]["actions"] == []

    status, refused = _vote(stack, result, "u1")
    assert (status, refused["error"]["code"]) == (403, "BEM-090")
    status, voted = _vote(stack, result, "ana")
    assert status == 202 and stack.queued() == 0
    assert voted["pending"][0]["action_id"] == action_id and voted["pending"][0]["required"] == 2
    assert [v["user_id"] for v in voted["pending"][0]["votes"]] == ["ana"]
    assert _vote(stack, result, "ana")[0] == 409

    status, ack = _vote(stack, result, "zed", ["ops"])
    assert status == 202 and ack["run_id"] and stack.drain() == []
    status, action = _read(stack, "records/action", f"/actions/{action_id}", user_id="ana")
    assert status == 200 and action["status"] == "resolved" and action["outcome"]["status"] == "ok"
    assert action["response"]["by"] == {"kind": "person", "user_id": "zed"}
    assert [v["user_id"] for v in action["response"]["votes"]] == ["ana", "zed"]
    assert _read(stack, "records/action", f"/sessions/{session_id}/messages", user_id="ana")[0] == 200
    assert _read(stack, "records/session", f"/sessions/{session_id}", user_id="ana")[0] == 404
    assert _read(stack, "records/action", f"/actions/{action_id}", user_id="eve")[0] == 404
    assert _read(stack, "records/actions", "/approvals", user_id="ana", status="resolved")[0] == 400


def test_an_approver_named_by_a_group_of_the_token(tmp_path: Path) -> None:
    """AuthMode jwt: the caller and their groups are the token's (`sub`, `cognito:groups` as API Gateway's
    authorizer passes an array: "[dev ops]"); the body's auth_context and the groups query say nothing."""
    agents = tmp_path / "agents.yaml"
    agents.write_text(AGENTS, encoding="utf-8")
    env = {"RIVERBEAM_AGENTS_FILE": str(agents), "JWT_ISSUER": "https://issuer.example", "JWT_AUDIENCE": "rb"}
    with lambda_stack(tmp_path / "data", auth_mode="jwt", **env) as stack:
        result = body_of(stack.call("invoke", http_event("invoke/http", body=invoke(str(uuid.uuid4())))))
        action_id = result["action_required"][0]["action_id"]

        def as_caller(e: dict[str, Any], groups: str | None) -> dict[str, Any]:
            if groups is not None:
                e["requestContext"]["authorizer"]["jwt"]["claims"]["cognito:groups"] = groups
            return e

        def inbox(sub: str, groups: str | None) -> list[str]:
            e = http_event("records/actions", path="/approvals", query={"groups": "ops"}, sub=sub)
            return [a["action_id"] for a in body_of(stack.call("records", as_caller(e, groups)))["actions"]]

        assert inbox("zed", "[dev ops]") == [action_id]
        assert inbox("zed", "[dev]") == []  # the query's groups count for nothing with a token
        body = resume(result) | {"auth_context": {"user_id": "zed", "groups": ["ops"]}}
        refused = stack.call("resume", as_caller(http_event("resume/http", body=body, sub="zed"), "[dev]"))
        assert (refused["statusCode"], body_of(refused)["error"]["code"]) == (403, "BEM-031")
        voted = stack.call("resume", as_caller(http_event("resume/http", body=body, sub="zed"), "[ops]"))
        assert voted["statusCode"] == 202 and [
            v["user_id"] for v in body_of(voted)["pending"][0]["votes"]
        ] == ["zed"]

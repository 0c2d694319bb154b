"""The approval checks of issue 13 as pure functions: the args' hash (part of the payload check, BEM-067),
an edit the tool forbids (BEM-071), edited args that do not fit the tool (BEM-001 naming the field), and
the resolution that keeps the original args beside the edited ones."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from beam_store import ActionResponsePart, ToolResultPart
from riverbeam.pipeline import checks

from tests.unit.test_resume_checks import NOW, USER, action, code, request, response

RULES = checks.EditRules(
    editable=lambda tool: tool != "deploy",
    problems=lambda tool, args: [] if isinstance(args.get("ref"), str) else [("ref", "Field required")],
)


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


STORED_HASH = sha('{"force":false,"ref":"docs/update"}')


def test_the_stored_hash_is_of_the_canonical_json() -> None:
    assert action().args_sha256 == STORED_HASH
    assert action(args={"é": "ü"}).args_sha256 == action(args={"é": "ü"}).args_sha256
    assert checks.args_sha256({"b": 1, "a": "é"}) == sha('{"a":"é","b":1}')


@pytest.mark.parametrize(
    "given, expected",
    [(None, None), (STORED_HASH, None), (STORED_HASH.upper(), None), (sha("{}"), "BEM-067"), ("", "BEM-067")],
)
def test_a_response_must_name_the_stored_hash_where_it_names_one(
    given: str | None, expected: str | None
) -> None:
    stored = action()
    req = request(response(stored, **({} if given is None else {"args_sha256": given})))
    assert code(checks.response_refusal(stored.action_id, stored, req.actions[0], req)) == expected


@pytest.mark.parametrize(
    "tool, edited, expected, field",
    [
        ("git_push", None, None, None),
        ("git_push", {"ref": "main"}, None, None),
        ("git_push", {"ref": 5}, "BEM-001", "actions.0.edited_args.ref"),
        ("deploy", {"ref": "main"}, "BEM-071", "actions.0.edited_args"),
        ("deploy", None, None, None),
    ],
)
def test_an_edit_must_be_allowed_and_fit_the_tool(
    tool: str, edited: dict[str, Any] | None, expected: str | None, field: str | None
) -> None:
    stored = action(tool=tool)
    req = request(response(stored, **({} if edited is None else {"edited_args": edited})))
    error = checks.response_refusal(stored.action_id, stored, req.actions[0], req, RULES)
    assert (code(error), error.field if error else None) == (expected, field)
    # a runner that says nothing of its tools takes any edit
    assert checks.response_refusal(stored.action_id, stored, req.actions[0], req) is None


def test_expiry_comes_after_pending_and_the_edit_checks_after_the_contracts_checks() -> None:
    expected = (
        "BEM-027",
        "BEM-064",
        "BEM-065",
        "BEM-066",
        "BEM-070",
        "BEM-067",
        "BEM-068",
        "BEM-071",
        "BEM-001",
    )
    assert expected == checks.RESOLVE_ORDER
    forbidden, unfit, mismatched = action(tool="deploy"), action(), action()
    req = request(
        response(forbidden, edited_args={"ref": "x"}),
        response(unfit, edited_args={"ref": 1}),
        response(mismatched, args_sha256=sha("{}")),
    )
    found = {a.action_id: a for a in (forbidden, unfit, mismatched)}
    responses = checks.responses_by_action(req)
    assert code(checks.first_refusal(found, responses, req, RULES)) == "BEM-067"
    del responses[mismatched.action_id]
    assert code(checks.first_refusal(found, responses, req, RULES)) == "BEM-071"
    del responses[forbidden.action_id]
    refusal = checks.first_refusal(found, responses, req, RULES)
    assert refusal is not None and (refusal.code, refusal.field) == ("BEM-001", "actions.1.edited_args.ref")


def test_the_resolution_keeps_the_requested_args_beside_the_edited_ones() -> None:
    edited, plain, refused = action(), action(), action()
    req = request(
        response(edited, edited_args={"ref": "main"}, args_sha256=STORED_HASH),
        response(plain),
        response(refused, "cancelled", reason="no"),
    )
    found = {a.action_id: a for a in (edited, plain, refused)}
    done = checks.resolve(found, checks.responses_by_action(req), "run-1", USER, NOW)
    first, second, third = done
    assert first.args == {"ref": "docs/update", "force": False} and first.args_sha256 == STORED_HASH
    assert first.response is not None and first.response.args_sha256 == STORED_HASH
    assert (first.response.edited_args, first.response.edited_args_sha256) == (
        {"ref": "main"},
        sha('{"ref":"main"}'),
    )
    assert (first.run_args, first.run_args_sha256) == ({"ref": "main"}, sha('{"ref":"main"}'))
    assert (second.run_args, second.run_args_sha256) == (second.args, STORED_HASH)
    assert second.response is not None and second.response.edited_args is None
    assert (third.status, third.run_args) == ("cancelled", None)
    told = next(checks.resolution_messages(first, "run-1", NOW)).content[0]
    assert isinstance(told, ActionResponsePart) and told.edited_args == {"ref": "main"}


@pytest.mark.parametrize(
    "changes, now, expected",
    [
        ({}, NOW, None),  # no expires_at: it waits
        ({"expires_at": "2026-01-01T00:00:00.000001Z"}, NOW, None),
        ({"expires_at": NOW}, NOW, "BEM-070"),  # at its time it is past it
        ({"expires_at": NOW}, None, None),  # no clock given: not checked
        ({"status": "expired", "expires_at": NOW}, None, "BEM-070"),  # stored expired: 410, not 066
        ({"status": "resolved", "expires_at": NOW}, NOW, "BEM-066"),
    ],
)
def test_an_action_past_its_time_is_410(
    changes: dict[str, Any], now: str | None, expected: str | None
) -> None:
    stored = action(**changes)
    req = request(response(stored))
    error = checks.response_refusal(stored.action_id, stored, req.actions[0], req, checks.ANY_EDIT, now)
    assert code(error) == expected
    if error is not None and error.code == "BEM-070":
        assert error.status == 410


def test_expiry_is_told_as_a_tool_error() -> None:
    message = checks.expiry_message(action(expires_at=NOW), "run-2", NOW)
    part = message.content[0]
    assert (message.role, message.run_id) == ("tool", "run-2")
    assert isinstance(part, ToolResultPart) and part.status == "error" and part.error is not None
    assert part.error.code == "BEM-070" and NOW in part.error.message

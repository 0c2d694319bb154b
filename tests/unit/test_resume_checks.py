"""The resume checks of CONTRACT 3.2 as pure functions: no store, no clock, each in the contract's order."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from beam_store import Action, Session, ToolResultPart
from riverbeam import BeamError, ResumeRequest
from riverbeam.pipeline import checks

NOW = "2026-01-01T00:00:00.000000Z"
SESSION, INTERACTION, USER = str(uuid.uuid4()), str(uuid.uuid4()), "alice"


def action(**changes: Any) -> Action:
    return Action(
        action_id=str(uuid.uuid4()),
        session_id=SESSION,
        interaction_id=INTERACTION,
        run_id=str(uuid.uuid4()),
        user_id=USER,
        agent_name="author",
        tool="git_push",
        args={"ref": "docs/update", "force": False},
        status="pending",
        created_at=NOW,
        updated_at=NOW,
    ).model_copy(update=changes)


def request(*responses: dict[str, Any], agent: str = "author") -> ResumeRequest:
    return ResumeRequest.model_validate(
        {
            "agent_name": agent,
            "session_id": SESSION,
            "interaction_id": INTERACTION,
            "actions": list(responses),
            "auth_context": {"user_id": USER},
        }
    )


def response(stored: Action, status: str = "submitted", **extra: Any) -> dict[str, Any]:
    return {"action_id": stored.action_id, "status": status, **extra}


def code(error: BeamError | None) -> str | None:
    return None if error is None else error.code


def raised(call: Any) -> BeamError:
    with pytest.raises(BeamError) as caught:
        call()
    return caught.value


def test_resume_needs_the_interaction_it_resumes() -> None:
    for body in ({}, {"interaction_id": None}, {"interaction_id": ""}):
        error = raised(lambda b=body: checks.require_interaction_id(b))
        assert (error.code, error.status, error.field) == ("BEM-062", 400, "interaction_id")
    checks.require_interaction_id({"interaction_id": INTERACTION})


def test_the_session_must_exist_and_be_the_callers() -> None:
    session = Session(session_id=SESSION, user_id=USER, created_at=NOW, updated_at=NOW)
    assert raised(lambda: checks.require_owner(None, SESSION, USER)).code == "BEM-020"
    assert raised(lambda: checks.require_owner(session, SESSION, "mallory")).code == "BEM-031"
    assert checks.require_owner(session, SESSION, USER) is session
    checks.refuse_other_owner(None, "anyone")  # a new session is anyone's to create
    assert raised(lambda: checks.refuse_other_owner(session, "mallory")).status == 403


def test_every_action_id_must_be_a_uuid_before_the_body_is_validated() -> None:
    body = {"actions": [{"action_id": str(uuid.uuid4())}, {"action_id": "nope"}, "not even a dict"]}
    error = raised(lambda: checks.require_uuid_action_ids(body))
    assert (error.code, error.field) == ("BEM-063", "actions.1.action_id")
    checks.require_uuid_action_ids({"actions": "not a list"})  # the body's own check says what is wrong
    checks.require_uuid_action_ids({"actions": [{"status": "submitted"}]})


def test_an_action_answered_twice_is_bem001_even_in_another_spelling() -> None:
    stored = action()
    twice = request(response(stored), response(stored, action_id=stored.action_id.upper()))
    error = raised(lambda: checks.responses_by_action(twice))
    assert (error.code, error.field) == ("BEM-001", "actions.1.action_id")
    once = checks.responses_by_action(request(response(stored, action_id=stored.action_id.upper())))
    assert list(once) == [stored.action_id]


@pytest.mark.parametrize(
    "current, expected",
    [
        (None, "BEM-027"),
        # another user's action in another session: not found, never a hint that it exists
        (action(session_id=str(uuid.uuid4()), user_id="bob"), "BEM-027"),
        (action(interaction_id=str(uuid.uuid4())), "BEM-064"),
        (action(interaction_id=str(uuid.uuid4()), session_id=str(uuid.uuid4())), "BEM-064"),
        (action(session_id=str(uuid.uuid4())), "BEM-065"),
        (action(status="resolved"), "BEM-066"),
        (action(status="cancelled"), "BEM-066"),
        (action(), None),
    ],
)
def test_action_checks_in_the_contracts_order(current: Action | None, expected: str | None) -> None:
    action_id = current.action_id if current else str(uuid.uuid4())
    assert code(checks.action_refusal(action_id, current, INTERACTION, SESSION, USER)) == expected


@pytest.mark.parametrize(
    "extra, agent, expected",
    [
        ({}, "author", None),
        ({"payload": {"tool": "git_push", "args": {"ref": "docs/update", "force": False}}}, "author", None),
        ({"payload": {"tool": "git_push", "args": {"force": False, "ref": "docs/update"}}}, "author", None),
        ({"payload": {"tool": "rm_rf", "args": {"ref": "docs/update", "force": False}}}, "author", "BEM-067"),
        ({"payload": {"tool": "git_push", "args": {"ref": "main", "force": False}}}, "author", "BEM-067"),
        # JSON types, not Python's: false is not 0
        ({"payload": {"tool": "git_push", "args": {"ref": "docs/update", "force": 0}}}, "author", "BEM-067"),
        ({"payload": {"tool": "git_push", "args": {"ref": "docs/update"}}}, "author", "BEM-067"),
        ({}, "reviewer", "BEM-068"),
    ],
)
def test_a_response_must_name_the_stored_tool_and_args(
    extra: dict[str, Any], agent: str, expected: str | None
) -> None:
    stored = action()
    req = request(response(stored, **extra), agent=agent)
    envelope = req.actions[0]
    assert code(checks.response_refusal(stored.action_id, stored, envelope, req)) == expected


def test_each_check_runs_over_every_action_before_the_next() -> None:
    resolved, elsewhere, fine = action(status="resolved"), action(interaction_id=str(uuid.uuid4())), action()
    bad_payload = {"payload": {"tool": "other"}}
    req = request(response(fine, **bad_payload), response(resolved), response(elsewhere))
    responses = checks.responses_by_action(req)
    found = {a.action_id: a for a in (resolved, elsewhere, fine)}
    # 067 comes first in the body, 066 second, 064 last: the contract's order wins, not the body's
    assert code(checks.first_refusal(found, responses, req)) == "BEM-064"
    del found[elsewhere.action_id]
    assert code(checks.first_refusal(found, responses, req)) == "BEM-027"
    alone = request(response(fine))
    assert checks.first_refusal({fine.action_id: fine}, checks.responses_by_action(alone), alone) is None
    assert checks.CHECK_ORDER == ("BEM-027", "BEM-064", "BEM-065", "BEM-066", "BEM-067", "BEM-068")


def test_the_resolution_records_who_answered_and_for_which_run() -> None:
    approved, refused = action(), action()
    req = request(response(approved), response(refused, "cancelled", reason="not today"))
    responses = checks.responses_by_action(req)
    found = {approved.action_id: approved, refused.action_id: refused}
    done = checks.resolve(found, responses, "run-1", USER, NOW)
    assert [(a.status, a.resolved_run_id) for a in done] == [("resolved", "run-1"), ("cancelled", "run-1")]
    assert [a.response.status for a in done if a.response] == ["submitted", "cancelled"]
    assert done[1].response is not None and (done[1].response.who, done[1].response.when) == (USER, NOW)
    assert done[1].response.reason == "not today"
    assert (done[0].tool, done[0].args) == (approved.tool, approved.args)  # the stored tool and args

    assert [m.type for m in checks.resolution_messages(done[0], "run-1", NOW)] == ["action_result"]
    result, refusal = checks.resolution_messages(done[1], "run-1", NOW)
    assert (result.role, result.type, refusal.role) == ("human", "action_result", "tool")
    part = refusal.content[0]
    assert isinstance(part, ToolResultPart) and part.status == "refused" and part.error is not None
    assert (part.error.code, part.error.message) == ("BEM-069", f"{USER} refused to run git_push: not today")


@pytest.mark.parametrize(
    "a, b, same",
    [
        (1, 1.0, True),
        (True, 1, False),
        (False, 0, False),
        ("1", 1, False),
        (None, None, True),
        ({"a": [1, {"b": True}]}, {"a": [1.0, {"b": True}]}, True),
        ({"a": [1, 2]}, {"a": [1, 2, 3]}, False),
        ({"a": 1}, {"a": 1, "b": None}, False),
    ],
)
def test_json_values_compare_by_json_type(a: Any, b: Any, same: bool) -> None:
    assert checks.same_json(a, b) is same
    assert checks.same_json(b, a) is same

"""Who may approve (CONTRACT 11), in process on every store: approvers by id and by group, four eyes, a
quorum with its votes, a second vote, a veto; what an approver may read; the approvers' inbox."""

from __future__ import annotations

from typing import Any

import pytest
from beam_store import BeamStore
from riverbeam import AgentResult, Approvals, BeamError, EventLog, RiverBeam, StreamAck, VoteAck

from tests.support.agents import PushCounter, author_beam, invoke_body, resume_body
from tests.support.stores import snapshot

TWO_OF_OPS = Approvals(users=("ana", "bo"), groups=("ops",), required=2, self_approval=False)


def _asked(
    store: BeamStore, approvals: Approvals, events: EventLog | None = None
) -> tuple[RiverBeam, PushCounter, AgentResult]:
    """u1 asks the author to push; git_push's actions are answered by `approvals`."""
    beam, counter = author_beam(store)
    beam.set_event_sink(events)
    beam.register_agent("author", beam.agents()["author"], approvals={"git_push": approvals})
    result = beam.invoke(invoke_body(user="u1"))
    assert isinstance(result, AgentResult) and result.interrupted
    return beam, counter, result


def _vote(beam: RiverBeam, result: AgentResult, user: str, status: str = "submitted", **extra: Any) -> Any:
    body = resume_body(result, status, user=user)
    body["auth_context"] |= extra.pop("auth", {})
    body["actions"][0] |= extra
    return beam.resume(body)


def _refused(
    beam: RiverBeam, store: BeamStore, result: AgentResult, user: str, code: str, **extra: Any
) -> None:
    """The vote is refused with `code` and nothing is written."""
    before = snapshot(store)
    with pytest.raises(BeamError) as refused:
        _vote(beam, result, user, **extra)
    assert refused.value.code == code
    assert snapshot(store) == before


def test_a_listed_approver_answers_another_users_action(store: BeamStore) -> None:
    beam, counter, result = _asked(store, Approvals(users=("ana",)))
    assert isinstance(_vote(beam, result, "ana"), StreamAck)
    action = store.get_action(result.action_required[0].action_id or "")
    assert action is not None and action.status == "resolved" and counter.pushed == ["docs/update"]
    assert action.response is not None and action.response.who == "ana"
    assert action.response.by is not None and action.response.by.model_dump() == {
        "kind": "person",
        "user_id": "ana",
    }
    assert [(v.user_id, v.status) for v in action.response.votes or []] == [("ana", "submitted")]


def test_an_approver_by_group_answers_and_anyone_else_is_told_the_session_is_not_theirs(
    store: BeamStore,
) -> None:
    beam, counter, result = _asked(store, Approvals(groups=("ops",)))
    _refused(beam, store, result, "eve", "BEM-031")
    _refused(beam, store, result, "eve", "BEM-031", auth={"groups": ["dev"]})
    assert isinstance(_vote(beam, result, "zed", auth={"groups": ["dev", "ops"]}), StreamAck)
    assert counter.pushed == ["docs/update"]


def test_four_eyes_refuse_the_requesters_approval_and_record_nothing(store: BeamStore) -> None:
    beam, counter, result = _asked(store, Approvals(users=("ana",), self_approval=False))
    _refused(beam, store, result, "u1", "BEM-090")
    assert counter.pushed == []
    assert isinstance(_vote(beam, result, "u1", "cancelled", reason="asked by mistake"), StreamAck)
    action = store.get_action(result.action_required[0].action_id or "")
    assert action is not None and action.status == "cancelled" and counter.pushed == []


def test_a_quorum_of_two_counts_votes_refuses_a_second_and_runs_the_tool_once(store: BeamStore) -> None:
    beam, counter, result = _asked(store, TWO_OF_OPS)
    action_id = result.action_required[0].action_id or ""
    first = _vote(beam, result, "ana", reason="looks right")
    assert isinstance(first, VoteAck) and counter.pushed == []
    assert first.session_id == result.session_id and first.interaction_id == result.interaction_id
    assert [(p.action_id, [v.user_id for v in p.votes], p.required) for p in first.pending] == [
        (action_id, ["ana"], 2)
    ]
    waiting = store.get_action(action_id)
    assert waiting is not None and waiting.status == "pending" and waiting.votes[0].reason == "looks right"
    assert store.list_runs(result.interaction_id or "")[-1].run_id == result.run_id  # no run started

    _refused(beam, store, result, "ana", "BEM-091")
    assert isinstance(_vote(beam, result, "zed", auth={"groups": ["ops"]}), StreamAck)
    done = store.get_action(action_id)
    assert done is not None and done.status == "resolved" and counter.pushed == ["docs/update"]
    assert done.response is not None and done.response.who == "zed"
    assert [v.user_id for v in done.response.votes or []] == ["ana", "zed"]
    _refused(beam, store, result, "bo", "BEM-066")
    assert counter.pushed == ["docs/update"]


def test_one_refusal_cancels_a_quorum(store: BeamStore) -> None:
    beam, counter, result = _asked(store, TWO_OF_OPS)
    assert isinstance(_vote(beam, result, "ana"), VoteAck)
    assert isinstance(_vote(beam, result, "bo", "cancelled", reason="not on a Friday"), StreamAck)
    action = store.get_action(result.action_required[0].action_id or "")
    assert action is not None and action.status == "cancelled" and counter.pushed == []
    assert [(v.user_id, v.status) for v in action.votes] == [("ana", "submitted"), ("bo", "cancelled")]


def test_args_of_an_action_that_needs_a_quorum_are_not_edited(store: BeamStore) -> None:
    beam, _, result = _asked(store, TWO_OF_OPS)
    _refused(beam, store, result, "ana", "BEM-092", edited_args={"ref": "main"})


def test_the_approvals_asked_with_stay_when_the_settings_change(store: BeamStore) -> None:
    beam, _, result = _asked(store, Approvals(users=("ana",)))
    beam.register_agent("author", beam.agents()["author"], approvals={"git_push": Approvals(users=("bo",))})
    _refused(beam, store, result, "bo", "BEM-031")
    assert isinstance(_vote(beam, result, "ana"), StreamAck)


def test_an_approver_reads_the_action_and_the_messages_and_nothing_else(store: BeamStore) -> None:
    beam, _, result = _asked(store, Approvals(groups=("ops",)))
    action_id, session_id = result.action_required[0].action_id or "", result.session_id or ""
    assert beam.read_action(action_id, user_id="zed", groups=["ops"]).action_id == action_id
    assert [m.seq for m in beam.read_messages(session_id, user_id="zed", groups=["ops"])] == [
        m.seq for m in beam.read_messages(session_id, user_id="u1")
    ]
    refusals = {
        "BEM-020": lambda: beam.read_session(session_id, user_id="zed"),
        "BEM-022": lambda: beam.read_interaction(result.interaction_id or "", user_id="zed"),
        "BEM-023": lambda: beam.read_run(result.run_id or "", user_id="zed"),
    }
    for code, read in refusals.items():
        with pytest.raises(BeamError) as refused:
            read()
        assert refused.value.code == code
    for reader in ({"user_id": "eve"}, {"user_id": "eve", "groups": ["dev"]}):
        with pytest.raises(BeamError) as refused:
            beam.read_action(action_id, **reader)
        assert refused.value.code == "BEM-027"
        with pytest.raises(BeamError) as refused:
            beam.read_messages(session_id, **reader)
        assert refused.value.code == "BEM-020"


def test_an_approver_sends_no_message_of_their_own(store: BeamStore) -> None:
    beam, _, result = _asked(store, Approvals(users=("ana",)))
    before = snapshot(store)
    body = resume_body(result, user="ana") | {"content": [{"type": "text", "text": "push main too"}]}
    with pytest.raises(BeamError) as refused:
        beam.resume(body)
    assert refused.value.code == "BEM-031" and snapshot(store) == before


def test_the_inbox_lists_what_the_caller_may_answer_across_sessions(store: BeamStore) -> None:
    beam, _, first = _asked(store, TWO_OF_OPS)
    second = beam.invoke(invoke_body(user="u2"))
    assert isinstance(second, AgentResult)

    def listed(user: str, groups: tuple[str, ...] = ()) -> list[str]:
        return [a.action_id for a in beam.list_approvals(user_id=user, groups=groups).actions]

    first_id, second_id = first.action_required[0].action_id, second.action_required[0].action_id
    assert listed("ana") == [second_id, first_id]  # newest first
    assert listed("zed", ("ops",)) == [second_id, first_id]
    assert listed("u1") == [] and listed("u2") == []  # four eyes: not their own
    _vote(beam, first, "ana")
    assert [len(a.votes) for a in beam.list_approvals(user_id="bo").actions] == [0, 1]
    assert listed("ana") == [second_id]  # voted: no longer hers to answer
    with pytest.raises(BeamError) as refused:
        beam.list_approvals(user_id="ana", status="resolved")
    assert refused.value.code == "BEM-001"


def test_the_approval_events_name_the_approvers_and_the_votes(store: BeamStore) -> None:
    log = EventLog()
    beam, _, result = _asked(store, TWO_OF_OPS, events=log)
    (requested,) = [e.detail for e in log if e.detail_type == "Approval Requested"]
    assert requested["approvals"] == {
        "users": ["ana", "bo"],
        "groups": ["ops"],
        "required": 2,
        "self_approval": False,
    }
    _vote(beam, result, "ana")
    assert [e.detail_type for e in log] == ["Approval Requested"]  # a vote alone decides nothing
    _vote(beam, result, "bo", reason="fine")
    (decided,) = [e.detail for e in log if e.detail_type == "Approval Decided"]
    assert decided["by"] == {"kind": "person", "user_id": "bo"} and decided["decided_by"] == "bo"
    assert [(v["user_id"], v["reason"]) for v in decided["votes"]] == [("ana", None), ("bo", "fine")]

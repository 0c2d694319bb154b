"""`add_votes` and `list_answerable`: an approver's vote on its condition (no vote since it was read), the
vote that resolves it likewise, and the approvers' inbox across sessions. Run on every store."""

from __future__ import annotations

import pytest
from beam_store import ActionConflict, ActionResponseRecord, BeamStore, StepWrite, utc_now
from beam_store.approvers import approval_cursor, caller_principals, with_vote
from beam_store.records import Action, Approvals

from tests.support import steps
from tests.support.contract import sid
from tests.support.stores import snapshot

OPS = Approvals(users=("ana", "bo"), groups=("ops",), required=2, self_approval=False)


def _asked(store: BeamStore, owner: str = "u1", approvals: Approvals | None = OPS) -> Action:
    """A pending action of a new session, asked with `approvals`."""
    s = steps.session(sid(), owner)
    i = steps.interaction(s.session_id)
    step, r = steps.begin(s, i)
    store.commit(step)
    action = steps.pending_action(i, r, owner).model_copy(update={"approvals": approvals})
    store.commit(steps.close(s, i, r, interrupted_with=[action]))
    return action


def _resolving(store: BeamStore, action: Action, voted: Action) -> StepWrite:
    """The step that resolves `action` with the votes of `voted` (its last vote the resolving one)."""
    s = store.get_session(action.session_id)
    i = store.get_interaction(action.interaction_id)
    assert s is not None and i is not None
    r = steps.run(i)
    last = voted.votes[-1]
    response = ActionResponseRecord(
        status=last.status, request_id=sid(), who=last.user_id, when=utc_now(), votes=voted.votes
    )
    resolved = voted.model_copy(
        update={"status": "resolved", "resolved_run_id": r.run_id, "response": response}
    )
    return StepWrite(
        session=s,
        session_op="update",
        interaction=i,
        interaction_op="acquire",
        run=r,
        run_op="create",
        messages=[steps.draft(i, r, "approved")],
        resolve_actions=[resolved],
    )


def test_a_vote_is_written_once_on_the_votes_it_was_read_with(store: BeamStore) -> None:
    action = _asked(store)
    first = with_vote(action, "ana", "submitted", utc_now(), None)
    store.add_votes([first], utc_now())
    got = store.get_action(action.action_id)
    assert got is not None and got.status == "pending"
    assert [(v.user_id, v.status) for v in got.votes] == [("ana", "submitted")]

    before = snapshot(store)
    stale = with_vote(action, "bo", "submitted", utc_now(), None)  # read before ana's vote
    with pytest.raises(ActionConflict) as refused:
        store.add_votes([stale], utc_now())
    assert refused.value.current is not None and len(refused.value.current.votes) == 1
    assert snapshot(store) == before


def test_the_resolving_vote_is_conditional_on_the_votes_seen(store: BeamStore) -> None:
    action = _asked(store)
    store.add_votes([with_vote(action, "ana", "submitted", utc_now(), None)], utc_now())
    stale = with_vote(action, "bo", "submitted", utc_now(), None)
    before = snapshot(store)
    with pytest.raises(ActionConflict):
        store.commit(_resolving(store, action, stale))
    assert snapshot(store) == before

    current = store.get_action(action.action_id)
    assert current is not None
    store.commit(_resolving(store, action, with_vote(current, "bo", "submitted", utc_now(), None)))
    got = store.get_action(action.action_id)
    assert got is not None and got.status == "resolved" and got.response is not None
    assert [v.user_id for v in got.response.votes or []] == ["ana", "bo"]
    assert [v.user_id for v in got.votes] == ["ana", "bo"]


def test_a_vote_on_an_action_no_longer_pending_conflicts(store: BeamStore) -> None:
    action = _asked(store)
    voted = with_vote(action, "ana", "submitted", utc_now(), None)
    store.commit(_resolving(store, action, voted))
    with pytest.raises(ActionConflict) as refused:
        store.add_votes([with_vote(action, "bo", "submitted", utc_now(), None)], utc_now())
    assert refused.value.current is not None and refused.value.current.status == "resolved"


def test_the_inbox_lists_what_each_approver_may_answer_across_sessions(store: BeamStore) -> None:
    four_eyes = _asked(store, owner="u1")
    plain = _asked(store, owner="u1", approvals=None)  # the owner alone
    other = _asked(store, owner="u2", approvals=Approvals(groups=("ops",)))

    def ids(user: str, groups: tuple[str, ...] = ()) -> list[str]:
        return [a.action_id for a in store.list_answerable(caller_principals(user, groups)).actions]

    assert ids("ana") == [four_eyes.action_id]
    assert ids("u1") == [plain.action_id]  # four eyes: not their own push
    assert ids("u2") == [other.action_id]  # the owner is an approver unless four eyes
    assert ids("zed", ("ops",)) == [other.action_id, four_eyes.action_id]  # newest first
    assert ids("ana", ("ops",)) == [other.action_id, four_eyes.action_id]  # each once
    assert ids("zed") == []


def test_the_inbox_shows_the_votes_so_far_and_drops_what_was_answered(store: BeamStore) -> None:
    action = _asked(store)
    store.add_votes([with_vote(action, "ana", "submitted", utc_now(), None)], utc_now())
    listed = store.list_answerable(caller_principals("bo")).actions
    assert [v.user_id for v in listed[0].votes] == ["ana"]

    current = store.get_action(action.action_id)
    assert current is not None
    store.commit(_resolving(store, action, with_vote(current, "bo", "submitted", utc_now(), None)))
    assert store.list_answerable(caller_principals("bo", ("ops",))).actions == []
    assert store.list_answerable(caller_principals("ana")).actions == []


def test_the_inbox_is_paged_newest_first(store: BeamStore) -> None:
    asked = [_asked(store, owner=f"o{n}", approvals=Approvals(users=("pat",))) for n in range(5)]
    newest_first = sorted(asked, key=approval_cursor, reverse=True)
    seen: list[str] = []
    cursor = None
    for _ in range(10):
        page = store.list_answerable(["user:pat"], before=cursor, limit=2)
        seen += [a.action_id for a in page.actions]
        cursor = page.cursor
        if cursor is None:
            break
    assert seen == [a.action_id for a in newest_first]


def test_the_inbox_leaves_out_what_is_past_its_time(store: BeamStore) -> None:
    late = _asked(store, approvals=Approvals(users=("cy",)))  # no expires_at: never past its time
    s = steps.session(sid(), "u1")
    i = steps.interaction(s.session_id)
    step, r = steps.begin(s, i)
    store.commit(step)
    due = steps.pending_action(i, r, "u1").model_copy(
        update={"approvals": Approvals(users=("cy",)), "expires_at": "2001-01-01T00:00:00.000000Z"}
    )
    store.commit(steps.close(s, i, r, interrupted_with=[due]))
    listed = store.list_answerable(["user:cy"], now="2002-01-01T00:00:00.000000Z").actions
    assert [a.action_id for a in listed] == [late.action_id]


def test_an_expired_action_leaves_every_inbox(store: BeamStore) -> None:
    s = steps.session(sid(), "u1")
    i = steps.interaction(s.session_id)
    step, r = steps.begin(s, i)
    store.commit(step)
    due = steps.pending_action(i, r, "u1").model_copy(
        update={
            "approvals": Approvals(users=("cy",), groups=("ops",)),
            "expires_at": "2001-01-01T00:00:00.000000Z",
        }
    )
    store.commit(steps.close(s, i, r, interrupted_with=[due]))
    principals = ["user:cy", "group:ops", "user:u1"]
    assert [a.action_id for a in store.list_answerable(principals).actions] == [due.action_id]
    after, expired_now = store.expire_action(due.action_id, "2002-01-01T00:00:00.000000Z")
    assert expired_now and after is not None and after.status == "expired"
    assert store.list_answerable(principals).actions == []  # not past its time only: gone
    assert not [item for item in map(str, snapshot(store)) if "INBOX#" in item]

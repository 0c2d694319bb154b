"""`expire_action` and the expiry's conditions in `commit` (issue 13), on every store: a pending action past
its expires_at is stored `expired` by one conditional write, a resolution past it is refused, and a run
tells the agent of an expiry once."""

from __future__ import annotations

import pytest
from beam_store import ActionConflict, BeamStore, StepWrite
from beam_store.records import ExpiryDecided

from tests.support import steps
from tests.support.contract import resolve_step, sid
from tests.support.stores import snapshot

EXPIRES = "2090-12-03T09:00:00.000000Z"
BEFORE, AFTER = "2090-12-03T08:59:59.999999Z", "2090-12-03T09:00:00.000000Z"


def expiring(store: BeamStore):  # type: ignore[no-untyped-def]
    s = steps.session(sid())
    i = steps.interaction(s.session_id)
    step, r = steps.begin(s, i)
    store.commit(step)
    action = steps.pending_action(i, r).model_copy(update={"expires_at": EXPIRES})
    store.commit(steps.close(s, i, r, interrupted_with=[action]))
    return s, i, action


def test_a_pending_action_expires_only_once_past_its_time(store: BeamStore) -> None:
    s, _, action = expiring(store)
    kept, done = store.expire_action(action.action_id, BEFORE)
    assert kept is not None and kept.status == "pending" and kept.expires_at == EXPIRES and not done
    expired, done = store.expire_action(action.action_id, AFTER)
    assert expired is not None and expired.status == "expired" and done
    stored = store.get_action(action.action_id)
    assert stored is not None and stored.status == "expired"
    for found in (expired, stored):  # who decided: nobody, in time (CONTRACT 11)
        assert found.response is not None and found.response.by == ExpiryDecided()
        assert found.response.when == AFTER
    again, done = store.expire_action(action.action_id, AFTER)  # the same time: still only once
    assert again is not None and again.status == "expired" and not done
    assert store.expire_action(sid(), AFTER) == (None, False)
    listed = store.list_session_actions(s.session_id, status="expired")
    assert [a.action_id for a in listed] == [action.action_id]
    assert store.list_session_actions(s.session_id, status="pending") == []


def test_a_resolved_action_never_expires(store: BeamStore) -> None:
    s, i, action = expiring(store)
    step, _ = resolve_step(store, s, i, action)
    store.commit(step)
    after, done = store.expire_action(action.action_id, "2099-01-01T00:00:00.000000Z")
    assert after is not None and after.status == "resolved" and not done


def _resolution_at(store: BeamStore, s, i, action, now: str) -> StepWrite:  # type: ignore[no-untyped-def]
    step, r = resolve_step(store, s, i, action)
    step.run = r.model_copy(update={"created_at": now, "updated_at": now})
    return step


def test_a_resolution_past_the_time_is_refused_and_writes_nothing(store: BeamStore) -> None:
    s, i, action = expiring(store)
    before = snapshot(store)
    with pytest.raises(ActionConflict) as refused:
        store.commit(_resolution_at(store, s, i, action, AFTER))
    assert refused.value.current is not None and refused.value.current.status == "pending"
    assert snapshot(store) == before
    store.commit(_resolution_at(store, s, i, action, BEFORE))
    got = store.get_action(action.action_id)
    assert got is not None and got.status == "resolved"


def test_a_run_tells_an_expiry_once(store: BeamStore) -> None:
    s, i, action = expiring(store)
    expired, _ = store.expire_action(action.action_id, AFTER)
    assert expired is not None
    step, r = steps.begin(s, i, create_session=False, create_interaction=False)
    step.tell_expired = [expired]
    store.commit(step)
    told = store.get_action(action.action_id)
    assert told is not None and told.status == "expired" and told.resolved_run_id == r.run_id
    store.commit(steps.close(s, i, r))
    again, _ = steps.begin(s, i, create_session=False, create_interaction=False)
    again.tell_expired = [expired]
    before = snapshot(store)
    with pytest.raises(ActionConflict):
        store.commit(again)
    assert snapshot(store) == before

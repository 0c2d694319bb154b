"""`list_overdue_actions` (the sweep's read) and `settle_interaction` (how it closes what waited), on every
store: pending actions of every session past their time, soonest first, in pages; an action leaves the
list once resolved or expired."""

from __future__ import annotations

from beam_store import Action, BeamStore
from beam_store.records import overdue_cursor

from tests.support import steps
from tests.support.contract import resolve_step, sid

SOON, LATER, NEVER = (
    "2090-01-01T00:00:00.000000Z",
    "2090-01-02T00:00:00.000000Z",
    "2099-01-01T00:00:00.000000Z",
)
NOW = "2090-01-03T00:00:00.000000Z"


def _asking(store: BeamStore, *expires: str | None):  # type: ignore[no-untyped-def]
    """A new session whose interaction's run asks for one action per `expires` time."""
    s = steps.session(sid())
    i = steps.interaction(s.session_id)
    step, r = steps.begin(s, i)
    store.commit(step)
    actions = [steps.pending_action(i, r).model_copy(update={"expires_at": at}) for at in expires]
    store.commit(steps.close(s, i, r, interrupted_with=actions))
    return s, i, actions


def _ids(actions: list[Action]) -> list[str]:
    return [a.action_id for a in actions]


def test_overdue_actions_of_every_session_soonest_first(store: BeamStore) -> None:
    _, _, (later, never) = _asking(store, LATER, NEVER)
    _, _, (soon, untimed) = _asking(store, SOON, None)
    found = store.list_overdue_actions(NOW)
    assert _ids(found) == [soon.action_id, later.action_id]
    assert all(a.status == "pending" for a in found) and found[0].expires_at == SOON
    assert store.list_overdue_actions("2089-12-31T23:59:59.999999Z") == []
    assert _ids(store.list_overdue_actions(SOON)) == [soon.action_id]  # due at `now` exactly
    assert never.action_id not in _ids(store.list_overdue_actions(NOW))
    assert untimed.action_id not in _ids(store.list_overdue_actions(NEVER))


def test_pages_go_on_after_the_cursor(store: BeamStore) -> None:
    _, _, actions = _asking(store, SOON, SOON, LATER)
    first = store.list_overdue_actions(NOW, limit=2)
    assert len(first) == 2
    rest = store.list_overdue_actions(NOW, after=overdue_cursor(first[-1]), limit=2)
    assert sorted(_ids(first + rest)) == sorted(_ids(actions))
    assert rest[-1].expires_at == LATER
    assert store.list_overdue_actions(NOW, limit=0) == []


def test_resolved_and_expired_actions_leave_the_list(store: BeamStore) -> None:
    s, i, (answered, swept) = _asking(store, SOON, SOON)
    step, _ = resolve_step(store, s, i, answered)
    store.commit(step)
    expired, done = store.expire_action(swept.action_id, NOW)
    assert expired is not None and expired.status == "expired" and done
    assert store.list_overdue_actions(NOW) == []


def test_settle_an_interaction_nobody_holds_and_nobody_wrote_since(store: BeamStore) -> None:
    s, i, _ = _asking(store, SOON)
    seen = store.get_interaction(i.interaction_id)
    assert seen is not None and seen.status == "in_progress" and seen.active_run_id is None
    opened = store.get_session(s.session_id)
    assert opened is not None and i.interaction_id in opened.open_interactions
    ids = {"session_id": s.session_id, "now": NOW}
    assert not store.settle_interaction(i.interaction_id, "completed", seen_updated_at="2000", **ids)
    other = {"session_id": sid(), "now": NOW}
    assert not store.settle_interaction(
        i.interaction_id, "completed", seen_updated_at=seen.updated_at, **other
    )
    assert store.settle_interaction(i.interaction_id, "completed", seen_updated_at=seen.updated_at, **ids)
    settled = store.get_interaction(i.interaction_id)
    assert settled is not None and settled.status == "completed" and settled.updated_at == NOW
    # an ended interaction is no longer among the session's interactions in progress
    session = store.get_session(s.session_id)
    assert session is not None and session.open_interactions == {}
    assert not store.settle_interaction(sid(), "completed", seen_updated_at=NOW, **ids)


def test_an_interaction_held_by_a_run_is_not_settled(store: BeamStore) -> None:
    s, i, _ = _asking(store, SOON)
    step, _ = steps.begin(s, i, create_session=False, create_interaction=False)
    store.commit(step)
    held = store.get_interaction(i.interaction_id)
    assert held is not None and held.active_run_id is not None
    assert not store.settle_interaction(
        i.interaction_id, "completed", session_id=s.session_id, seen_updated_at=held.updated_at, now=NOW
    )
    after = store.get_interaction(i.interaction_id)
    assert after is not None and after.status == "in_progress" and after.active_run_id == held.active_run_id

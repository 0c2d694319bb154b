"""The outbox on every store: a step's events (`StepWrite.outbox`) and an expiry's (`expire_action(...,
outbox=)`) are kept by the write that commits, in that write, and by no write that is refused; what is kept
is what was given, the id included."""

from __future__ import annotations

import pytest
from beam_store import Action, ActionConflict, BeamStore, DynamoBeamStore, OutboxEvent, StepWrite

from tests.support import steps
from tests.support.contract import interrupted_interaction, resolve_step, sid
from tests.support.stores import outbox, snapshot

EXPIRES = "2090-12-03T09:00:00.000000Z"
AFTER = "2090-12-03T09:00:00.000000Z"


def event(action: Action, kind: str, **detail: object) -> OutboxEvent:
    event_id = f"evt_{action.action_id}_{kind}"
    body = {"id": event_id, "action_id": action.action_id, "status": action.status, **detail}
    return OutboxEvent(event_id, "riverbeam", f"Approval {kind.title()}", body)


def test_a_closing_step_keeps_its_events_as_given(store: BeamStore) -> None:
    s = steps.session(sid())
    i = steps.interaction(s.session_id)
    step, r = steps.begin(s, i)
    store.commit(step)
    action = steps.pending_action(i, r)
    # JSON of every shape survives: unicode, nesting, floats, null, a large int
    told = event(action, "requested", args={"ref": "docs/ü\u202e", "n": [1.5, None, 10**20]}, ok=True)
    closing = steps.close(s, i, r, interrupted_with=[action])
    closing.outbox = [told]
    store.commit(closing)
    assert outbox(store) == [told]


def test_a_refused_step_keeps_none_of_its_events(store: BeamStore) -> None:
    s, i, action = interrupted_interaction(store)
    first, _ = resolve_step(store, s, i, action)
    first.outbox = [event(action, "decided", decision="submitted")]
    store.commit(first)
    before, kept = snapshot(store), outbox(store)
    again, _ = resolve_step(store, s, i, action)  # the action is no longer pending
    again.outbox = [event(action, "decided", decision="cancelled")]
    with pytest.raises(ActionConflict):
        store.commit(again)
    assert outbox(store) == kept and snapshot(store) == before
    assert [e.detail["decision"] for e in kept] == ["submitted"]


def test_a_resume_of_25_actions_keeps_25_large_events_in_its_one_write(store: BeamStore) -> None:
    """DynamoDB's transaction takes 100 items: 25 resolutions, 25 messages and 25 events of 9 KB each
    fit because a step's events share an item or a few, not one each."""
    s = steps.session(sid())
    i = steps.interaction(s.session_id)
    step, r = steps.begin(s, i)
    store.commit(step)
    actions = [steps.pending_action(i, r) for _ in range(25)]
    store.commit(steps.close(s, i, r, interrupted_with=actions))
    resolving, r2 = resolve_step(store, s, i, actions[0])
    resolving.resolve_actions = [
        resolve_step(store, s, i, a)[0].resolve_actions[0].model_copy(update={"resolved_run_id": r2.run_id})
        for a in actions
    ]
    resolving.messages = [steps.draft(i, r2, f"approved {n}") for n in range(25)]
    told = [event(a, "decided", args={"text": "x" * 9000}) for a in actions]
    resolving.outbox = told
    store.commit(resolving)
    assert sorted(outbox(store)) == sorted(told)
    assert all(a.status == "resolved" for a in store.list_actions(i.interaction_id))


def _expiring(store: BeamStore) -> Action:
    s = steps.session(sid())
    i = steps.interaction(s.session_id)
    step, r = steps.begin(s, i)
    store.commit(step)
    action = steps.pending_action(i, r).model_copy(update={"expires_at": EXPIRES})
    store.commit(steps.close(s, i, r, interrupted_with=[action]))
    return action


def test_only_the_expiry_that_wins_keeps_its_events_made_from_the_expired_action(store: BeamStore) -> None:
    action = _expiring(store)
    seen: list[Action] = []

    def expired_event(expired: Action) -> list[OutboxEvent]:
        seen.append(expired)
        return [event(expired, "expired", expired_by="sweep", expired_at=expired.updated_at)]

    after, done = store.expire_action(action.action_id, AFTER, outbox=expired_event)
    assert done and after is not None
    assert [(a.action_id, a.status, a.updated_at) for a in seen] == [(action.action_id, "expired", AFTER)]
    again, done_again = store.expire_action(action.action_id, AFTER, outbox=expired_event)
    assert not done_again and again is not None and again.status == "expired"
    assert outbox(store) == [event(after, "expired", expired_by="sweep", expired_at=AFTER)]


def test_an_expiry_that_loses_to_a_resolution_keeps_no_event(
    store: BeamStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    action = _expiring(store)
    pending = store.get_action(action.action_id)
    s = store.get_session(action.session_id)
    i = store.get_interaction(action.interaction_id)
    assert pending is not None and s is not None and i is not None
    resolving, _ = resolve_step(store, s, i, pending)
    store.commit(resolving)
    if isinstance(store, DynamoBeamStore):  # the race: read pending, then resolved before the write
        monkeypatch.setattr(store, "get_action", lambda action_id: pending)
    after, done = store.expire_action(action.action_id, AFTER, outbox=lambda a: [event(a, "expired")])
    assert not done and after is not None and after.status == "resolved"
    assert outbox(store) == []


def test_a_step_without_events_keeps_none(store: BeamStore) -> None:
    s = steps.session(sid())
    i = steps.interaction(s.session_id)
    step, _ = steps.begin(s, i)
    assert isinstance(step, StepWrite) and step.outbox == []
    store.commit(step)
    assert outbox(store) == []

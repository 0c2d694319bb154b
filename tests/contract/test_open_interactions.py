"""The session's `open_interactions` (what a step's conversation leaves out, CONTRACT 3.11) and
`get_interaction_waiting` (what the sweep decides an interaction's end from), kept by `commit` on every
store: an interaction is in progress from the seq of its first message until a run leaves it completed or
failed; a run that leaves it waiting keeps it, with the actions it waits on."""

from __future__ import annotations

from beam_store import BeamStore, StepWrite
from beam_store.records import ActionStatus

from tests.support import steps
from tests.support.contract import interrupted_interaction, resolve_step, sid

PAST, NOW = "2000-01-01T00:00:00.000000Z", "2000-01-02T00:00:00.000000Z"


def _opened(store: BeamStore, session_id: str) -> dict[str, int]:
    session = store.get_session(session_id)
    assert session is not None
    read, _ = store.get_session_with_messages(session_id, last=1)
    assert read is not None and read.open_interactions == session.open_interactions
    return session.open_interactions


def test_an_interaction_is_open_from_its_first_message_until_it_ends(store: BeamStore) -> None:
    s = steps.session(sid())
    first = steps.interaction(s.session_id)
    step, r1 = steps.begin(s, first, texts=("a", "b"))
    store.commit(step)
    assert _opened(store, s.session_id) == {first.interaction_id: 1}

    second = steps.interaction(s.session_id)
    step, r2 = steps.begin(s.model_copy(update={"last_seq": 2}), second, create_session=False)
    store.commit(step)
    assert _opened(store, s.session_id) == {first.interaction_id: 1, second.interaction_id: 3}

    store.commit(steps.close(s.model_copy(update={"last_seq": 3}), first, r1))  # completed
    assert _opened(store, s.session_id) == {second.interaction_id: 3}
    action = steps.pending_action(second, r2)
    store.commit(steps.close(s.model_copy(update={"last_seq": 4}), second, r2, interrupted_with=[action]))
    assert _opened(store, s.session_id) == {second.interaction_id: 3}  # waiting: still in progress


def test_a_run_that_takes_one_up_keeps_its_start_and_an_ended_one_starts_again(store: BeamStore) -> None:
    s, i, action = interrupted_interaction(store)
    assert _opened(store, s.session_id) == {i.interaction_id: 1}
    step, r = resolve_step(store, s.model_copy(update={"last_seq": 2}), i, action)
    store.commit(step)
    assert _opened(store, s.session_id) == {i.interaction_id: 1}
    failed = steps.close(s.model_copy(update={"last_seq": 3}), i, r)
    failed.interaction = failed.interaction.model_copy(update={"status": "failed"})
    store.commit(failed)
    assert _opened(store, s.session_id) == {}

    again, _ = steps.begin(
        s.model_copy(update={"last_seq": 4}), i, create_session=False, create_interaction=False
    )
    store.commit(again)
    assert _opened(store, s.session_id) == {i.interaction_id: 5}


def _resolved(store: BeamStore, s, i, action, status: ActionStatus) -> StepWrite:  # type: ignore[no-untyped-def]
    step, r = resolve_step(store, s, i, action, status=status)
    store.commit(step)
    return steps.close(s, i, r)


def test_the_actions_an_interaction_waits_on_are_read_as_they_are(store: BeamStore) -> None:
    s, i, action = interrupted_interaction(store)
    seen, pending = store.get_interaction_waiting(i.interaction_id)
    assert seen is not None and seen.interaction_id == i.interaction_id and seen.status == "in_progress"
    assert [a.action_id for a in pending] == [action.action_id]
    assert pending[0].status == "pending"

    store.commit(_resolved(store, s, i, action, "resolved"))
    seen, pending = store.get_interaction_waiting(i.interaction_id)
    assert seen is not None and seen.status == "completed" and pending == []
    assert store.get_interaction_waiting(sid()) == (None, [])


def test_an_expired_action_is_no_longer_waited_on_and_a_later_runs_are(store: BeamStore) -> None:
    s = steps.session(sid())
    i = steps.interaction(s.session_id)
    step, r = steps.begin(s, i)
    store.commit(step)
    overdue = steps.pending_action(i, r).model_copy(update={"expires_at": PAST})
    kept = steps.pending_action(i, r)
    store.commit(steps.close(s, i, r, interrupted_with=[overdue, kept]))
    _, pending = store.get_interaction_waiting(i.interaction_id)
    assert sorted(a.action_id for a in pending) == sorted([overdue.action_id, kept.action_id])

    expired, done = store.expire_action(overdue.action_id, NOW)
    assert expired is not None and expired.status == "expired" and done
    _, pending = store.get_interaction_waiting(i.interaction_id)
    assert [a.action_id for a in pending] == [kept.action_id]

    # a later run of the interaction asks for another: it is waited on beside the one still pending
    step, r2 = steps.begin(s, i, create_session=False, create_interaction=False)
    store.commit(step)
    later = steps.pending_action(i, r2)
    store.commit(steps.close(s, i, r2, interrupted_with=[later]))
    seen, pending = store.get_interaction_waiting(i.interaction_id)
    assert seen is not None and seen.status == "in_progress" and seen.active_run_id is None
    assert sorted(a.action_id for a in pending) == sorted([kept.action_id, later.action_id])
    assert all(a.status == "pending" for a in pending)

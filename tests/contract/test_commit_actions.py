"""`commit`: actions resolved, opened and given an outcome, each on its condition; conflicts first. Run on
every store (the `store` fixture of tests/conftest.py)."""

from __future__ import annotations

import pytest
from beam_store import (
    ActionConflict,
    BeamStore,
    StepWrite,
    ToolOutcome,
)

from tests.support import steps
from tests.support.contract import interrupted_interaction, resolve_step, sid
from tests.support.stores import snapshot


def test_resolution_is_conditional_on_pending_interaction_and_session(store: BeamStore) -> None:
    s, i, action = interrupted_interaction(store)
    assert [a.action_id for a in store.list_actions(i.interaction_id)] == [action.action_id]
    step, r = resolve_step(store, s, i, action)
    store.commit(step)
    got = store.get_action(action.action_id)
    assert got is not None and got.status == "resolved" and got.resolved_run_id == r.run_id
    assert got.response is not None and got.response.who == "u1"

    before = snapshot(store)
    again, _ = resolve_step(store, s, i, action)
    with pytest.raises(ActionConflict) as refused:
        store.commit(again)
    assert refused.value.current is not None and refused.value.current.status == "resolved"
    assert snapshot(store) == before


def test_a_resolution_for_another_interaction_or_session_reports_the_stored_action(store: BeamStore) -> None:
    s, i, action = interrupted_interaction(store)
    s2, i2, _ = interrupted_interaction(store)
    before = snapshot(store)
    for wrong in (
        action.model_copy(update={"interaction_id": i2.interaction_id}),
        action.model_copy(update={"session_id": s2.session_id}),
    ):
        step, _ = resolve_step(store, s2, i2, wrong)
        with pytest.raises(ActionConflict) as refused:
            store.commit(step)
        assert refused.value.current is not None
        assert refused.value.current.interaction_id == i.interaction_id
        assert refused.value.current.session_id == s.session_id
    missing = action.model_copy(update={"action_id": sid()})
    step, _ = resolve_step(store, s, i, missing)
    with pytest.raises(ActionConflict) as refused:
        store.commit(step)
    assert refused.value.current is None
    assert snapshot(store) == before


def test_action_conflict_wins_over_a_busy_interaction(store: BeamStore) -> None:
    s, i, action = interrupted_interaction(store)
    step, _ = resolve_step(store, s, i, action)
    store.commit(step)  # the interaction is now held by the winner's run
    again, _ = resolve_step(store, s, i, action)
    with pytest.raises(ActionConflict):
        store.commit(again)


def test_outcome_is_recorded_once_by_the_resolving_run(store: BeamStore) -> None:
    s, i, action = interrupted_interaction(store)
    step, r = resolve_step(store, s, i, action)
    store.commit(step)
    stored = store.get_action(action.action_id)
    assert stored is not None
    with_outcome = stored.model_copy(update={"outcome": ToolOutcome(status="ok", output={"pushed": True})})
    finish = steps.close(s, i, r)
    finish.record_outcomes = [with_outcome]
    store.commit(finish)
    got = store.get_action(action.action_id)
    assert got is not None and got.outcome is not None and got.outcome.output == {"pushed": True}

    other_run = steps.run(i)
    store.commit(
        StepWrite(
            session=s,
            session_op="update",
            interaction=i,
            interaction_op="acquire",
            run=other_run,
            run_op="create",
        )
    )
    before = snapshot(store)
    second = steps.close(s, i, other_run)
    second.record_outcomes = [with_outcome]
    with pytest.raises(ActionConflict):
        store.commit(second)
    assert snapshot(store) == before


def test_reopening_a_pending_action_keeps_it(store: BeamStore) -> None:
    s, i, action = interrupted_interaction(store)
    original = store.get_action(action.action_id)
    r = steps.run(i)
    store.commit(
        StepWrite(
            session=s, session_op="update", interaction=i, interaction_op="acquire", run=r, run_op="create"
        )
    )
    store.commit(steps.close(s, i, r, interrupted_with=[action.model_copy(update={"run_id": r.run_id})]))
    assert store.get_action(action.action_id) == original

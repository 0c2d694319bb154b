"""`list_actions`: an interaction's actions, pending first. Run on every store (the `store` fixture of
tests/conftest.py)."""

from __future__ import annotations

from beam_store import (
    BeamStore,
    StepWrite,
)

from tests.support import steps
from tests.support.contract import interrupted_interaction, resolve_step


def test_actions_list_pending_first(store: BeamStore) -> None:
    s, i, first = interrupted_interaction(store)
    r = steps.run(i)
    store.commit(
        StepWrite(
            session=s, session_op="update", interaction=i, interaction_op="acquire", run=r, run_op="create"
        )
    )
    second = steps.pending_action(i, r)
    store.commit(steps.close(s, i, r, interrupted_with=[second]))
    assert [a.action_id for a in store.list_actions(i.interaction_id)] == [first.action_id, second.action_id]
    step, _ = resolve_step(store, s, i, first)
    store.commit(step)
    assert [a.action_id for a in store.list_actions(i.interaction_id)] == [second.action_id, first.action_id]

"""An interaction's state (StepWrite.state, get_state): kept by the step that closes a run, read back
whole, replaced or dropped by a later step, and written only with its step. Run on every store (the
`store` fixture of tests/conftest.py); a state over DynamoDB's item limit is kept in S3
(tests/contract/test_large_content.py's stores have a bucket)."""

from __future__ import annotations

import pytest
from beam_store import BeamStore, StoreConflict

from tests.support import steps
from tests.support.contract import sid


def _closing(store: BeamStore, state: object, op: str | None = "put") -> tuple[str, object]:
    s = steps.session(sid())
    i = steps.interaction(s.session_id)
    step, r = steps.begin(s, i)
    store.commit(step)
    closing = steps.close(s, i, r)
    closing.state, closing.state_op = state, op  # type: ignore[assignment]
    store.commit(closing)
    return i.interaction_id, (s, i)


def test_a_closing_step_keeps_the_state_and_it_reads_back_whole(store: BeamStore) -> None:
    state = {"messages": [{"role": "user", "text": "é" * 10}], "n": 3, "f": 0.5, "none": None, "l": [1, []]}
    interaction_id, _ = _closing(store, state)
    assert store.get_state(interaction_id) == state
    assert store.get_state(sid()) is None  # an interaction that keeps none


def test_a_later_step_replaces_or_drops_the_state(store: BeamStore) -> None:
    interaction_id, (s, i) = _closing(store, {"turn": 1})
    again, r = steps.begin(s, i, create_session=False, create_interaction=False)
    store.commit(again)
    closing = steps.close(s, i, r)
    closing.state, closing.state_op = ["turn", 2], "put"
    store.commit(closing)
    assert store.get_state(interaction_id) == ["turn", 2]
    third, r = steps.begin(s, i, create_session=False, create_interaction=False)
    store.commit(third)
    store.commit(steps.close(s, i, r))  # no state_op: left as it is
    assert store.get_state(interaction_id) == ["turn", 2]
    fourth, r = steps.begin(s, i, create_session=False, create_interaction=False)
    store.commit(fourth)
    dropping = steps.close(s, i, r)
    dropping.state_op = "delete"
    store.commit(dropping)
    assert store.get_state(interaction_id) is None


def test_a_refused_step_keeps_no_state(store: BeamStore) -> None:
    interaction_id, (s, i) = _closing(store, {"kept": True})
    # never opened: its close is refused
    _, r = steps.begin(s, i, create_session=False, create_interaction=False)
    closing = steps.close(s, i, r)
    closing.state, closing.state_op = {"kept": False}, "put"
    with pytest.raises(StoreConflict):
        store.commit(closing)
    assert store.get_state(interaction_id) == {"kept": True}

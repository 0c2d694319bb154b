"""`commit`: one run at a time per interaction, in its own session. Run on every store (the `store` fixture
of tests/conftest.py)."""

from __future__ import annotations

import pytest
from beam_store import (
    BeamStore,
    InteractionBusy,
    InteractionInOtherSession,
    InteractionMissing,
)

from tests.support import steps
from tests.support.contract import sid
from tests.support.stores import snapshot


def test_one_run_at_a_time_per_interaction(store: BeamStore) -> None:
    s = steps.session(sid())
    i = steps.interaction(s.session_id)
    store.commit(steps.begin(s, i)[0])
    before = snapshot(store)
    step, _ = steps.begin(s, i, create_session=False, create_interaction=False)
    with pytest.raises(InteractionBusy):
        store.commit(step)
    assert snapshot(store) == before


def test_acquiring_a_missing_or_foreign_interaction_is_refused(store: BeamStore) -> None:
    s = steps.session(sid())
    i = steps.interaction(s.session_id)
    store.commit(steps.begin(s, i)[0])
    other = steps.session(sid())
    store.commit(steps.begin(other, steps.interaction(other.session_id))[0])
    before = snapshot(store)
    with pytest.raises(InteractionMissing):
        store.commit(
            steps.begin(s, steps.interaction(s.session_id), create_session=False, create_interaction=False)[0]
        )
    with pytest.raises(InteractionInOtherSession):
        store.commit(
            steps.begin(
                other,
                steps.interaction(other.session_id, i.interaction_id),
                create_session=False,
                create_interaction=False,
            )[0]
        )
    assert snapshot(store) == before

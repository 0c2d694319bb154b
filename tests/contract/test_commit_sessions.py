"""`commit`: the session's owner and existence, as a step's condition. Run on every store (the `store`
fixture of tests/conftest.py)."""

from __future__ import annotations

import pytest
from beam_store import (
    BeamStore,
    SessionMissing,
    SessionOwnedByOther,
)

from tests.support import steps
from tests.support.contract import sid
from tests.support.stores import snapshot


def test_a_new_session_of_another_owner_is_refused_and_nothing_written(store: BeamStore) -> None:
    s = steps.session(sid(), "alice")
    store.commit(steps.begin(s, steps.interaction(s.session_id))[0])
    before = snapshot(store)
    intruder = s.model_copy(update={"user_id": "mallory"})
    for create in (True, False):
        step, _ = steps.begin(intruder, steps.interaction(s.session_id), create_session=create)
        with pytest.raises(SessionOwnedByOther):
            store.commit(step)
    assert snapshot(store) == before


def test_updating_a_missing_session_is_refused(store: BeamStore) -> None:
    s = steps.session(sid())
    step, _ = steps.begin(s, steps.interaction(s.session_id), create_session=False)
    with pytest.raises(SessionMissing):
        store.commit(step)
    assert store.get_session(s.session_id) is None


def test_a_create_that_finds_the_session_created_meanwhile_goes_on(store: BeamStore) -> None:
    s = steps.session(sid())
    store.commit(steps.begin(s, steps.interaction(s.session_id))[0])
    written = store.commit(steps.begin(s, steps.interaction(s.session_id))[0])
    assert [m.seq for m in written] == [2]

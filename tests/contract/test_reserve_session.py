"""`reserve_session`: a session not yet created belongs to its first subscriber. Run on every store (the
`store` fixture of tests/conftest.py)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from beam_store import (
    BeamStore,
    SessionOwnedByOther,
)

from tests.support import steps
from tests.support.contract import sid


def test_a_reserved_session_belongs_to_its_first_reserver(store: BeamStore) -> None:
    first = steps.session(sid(), "alice")
    assert store.reserve_session(first).user_id == "alice"
    # a second reservation, by anyone, gets the stored session and changes nothing
    again = store.reserve_session(first.model_copy(update={"user_id": "mallory"}))
    assert again.user_id == "alice"
    stored = store.get_session(first.session_id)
    assert stored is not None and stored.user_id == "alice" and stored.last_seq == 0


def test_concurrent_reservations_of_one_session_have_one_owner(store: BeamStore) -> None:
    session_id = sid()
    users = [f"user{n}" for n in range(8)]
    with ThreadPoolExecutor(len(users)) as pool:
        owners = list(pool.map(lambda u: store.reserve_session(steps.session(session_id, u)).user_id, users))
    assert len(set(owners)) == 1 and owners[0] in users
    stored = store.get_session(session_id)
    assert stored is not None and stored.user_id == owners[0]


def test_a_reserved_session_takes_its_owners_first_step(store: BeamStore) -> None:
    s = steps.session(sid(), "alice")
    store.reserve_session(s)
    i = steps.interaction(s.session_id)
    step, _ = steps.begin(s, i)  # a create: the step finds the session reserved and goes on
    written = store.commit(step)
    assert [m.seq for m in written] == [1]
    with pytest.raises(SessionOwnedByOther):
        other, _ = steps.begin(steps.session(s.session_id, "mallory"), steps.interaction(s.session_id))
        store.commit(other)

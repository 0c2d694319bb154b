"""`get_session_with_messages`: the session and its messages in one read, all of them or the `last` ones
(the window a step reads, so that its cost stays flat). Run on every store (the `store` fixture of
tests/conftest.py)."""

from __future__ import annotations

from beam_store import BeamStore

from tests.support import steps
from tests.support.contract import sid


def _session_with(store: BeamStore, count: int) -> str:
    s = steps.session(sid(), "u1")
    i = steps.interaction(s.session_id)
    step, _ = steps.begin(s, i, texts=tuple(f"m{n}" for n in range(1, count + 1)))
    store.commit(step)
    return s.session_id


def test_all_messages_or_the_last_ones_in_seq_order(store: BeamStore) -> None:
    session_id = _session_with(store, 5)
    session, every = store.get_session_with_messages(session_id)
    assert session is not None and session.last_seq == 5
    assert [m.seq for m in every] == [1, 2, 3, 4, 5]
    for last, seqs in ((2, [4, 5]), (1, [5]), (5, [1, 2, 3, 4, 5]), (50, [1, 2, 3, 4, 5])):
        found, tail = store.get_session_with_messages(session_id, last=last)
        assert found == session
        assert [m.seq for m in tail] == seqs
        assert tail == every[-last:]
    assert store.get_session_with_messages(session_id, last=None) == (session, every)


def test_no_messages_reads_the_session_alone(store: BeamStore) -> None:
    session_id = _session_with(store, 3)
    session, tail = store.get_session_with_messages(session_id, last=0)
    assert session is not None and session.session_id == session_id and tail == []


def test_a_missing_session_has_nothing(store: BeamStore) -> None:
    assert store.get_session_with_messages(sid(), last=3) == (None, [])
    assert store.get_session_with_messages(sid(), last=0) == (None, [])

"""Getters and the session's reads: `None` and empty lists for what does not exist. Run on every store (the
`store` fixture of tests/conftest.py)."""

from __future__ import annotations

from beam_store import (
    BeamStore,
)

from tests.support.contract import sid


def test_getters_return_none_for_unknown_ids(store: BeamStore) -> None:
    assert store.get_session(sid()) is None
    assert store.get_interaction(sid()) is None
    assert store.get_run(sid()) is None
    assert store.get_action(sid()) is None
    assert store.list_messages(sid()) == []
    assert store.get_session_with_messages(sid()) == (None, [])

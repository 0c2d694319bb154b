"""`put_connection`, `get_connection`, `delete_connection`, `list_connections`. Run on every store (the
`store` fixture of tests/conftest.py)."""

from __future__ import annotations

import time

from beam_store import (
    BeamStore,
    Connection,
    utc_now,
)

from tests.support.contract import sid


def _connection(session_id: str, connection_id: str, expires_in: float = 3600) -> Connection:
    return Connection(
        connection_id=connection_id,
        session_id=session_id,
        user_id="alice",
        connected_at=utc_now(),
        expires_at=int(time.time() + expires_in),
    )


def test_connections_are_listed_per_session_and_forgotten(store: BeamStore) -> None:
    one, two = sid(), sid()
    third = _connection(two, "c3")
    for c in (_connection(one, "c1"), _connection(one, "c2"), third):
        store.put_connection(c)
    assert sorted(c.connection_id for c in store.list_connections(one)) == ["c1", "c2"]
    assert store.get_connection("c3") == third
    store.delete_connection("c1")
    store.delete_connection("c1")  # twice is no error
    assert [c.connection_id for c in store.list_connections(one)] == ["c2"]
    assert store.get_connection("c1") is None
    assert store.list_connections(sid()) == []


def test_expired_connections_are_not_listed(store: BeamStore) -> None:
    session_id = sid()
    store.put_connection(_connection(session_id, "old", expires_in=-1))
    store.put_connection(_connection(session_id, "live"))
    assert [c.connection_id for c in store.list_connections(session_id)] == ["live"]

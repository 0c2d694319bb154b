"""A session's WebSocket subscribers (CONTRACT 4): only the session's owner subscribes; a session that
does not exist yet is reserved for its first subscriber, so its first invoke must come from that user."""

from __future__ import annotations

import time

from beam_store import Connection

from ..errors import BeamError
from ..models import AuthContext
from .setup import Setup
from .step import new_session

# API Gateway closes a WebSocket connection after two hours; its record outlives that a little
CONNECTION_TTL_SECONDS = 2 * 3600 + 600


def subscribe(setup: Setup, connection_id: str, session_id: str, user: AuthContext) -> None:
    """Reserve the session for `user` unless it exists, refuse anyone but its owner (BEM-031), then
    subscribe the connection to its frames."""
    now = setup.now()
    owner = setup.store.reserve_session(new_session(session_id, user, now))
    if owner.user_id != user.user_id:
        raise BeamError("BEM-031", "the session belongs to another user", field="session_id")
    setup.store.put_connection(
        Connection(
            connection_id=connection_id,
            session_id=session_id,
            user_id=user.user_id,
            groups=list(user.groups),
            connected_at=now,
            # DynamoDB's TTL, which goes by the wall clock
            expires_at=int(time.time()) + CONNECTION_TTL_SECONDS,
        )
    )


def subscriber(setup: Setup, connection_id: str) -> AuthContext:
    """Who subscribed the connection, in the groups their identity gave at $connect: the caller of what it
    sends (BEM-030 if it is not subscribed)."""
    connection = setup.store.get_connection(connection_id)
    if connection is None:
        raise BeamError("BEM-030", "this connection is not subscribed; reconnect")
    return AuthContext(user_id=connection.user_id, groups=list(connection.groups))


def connections(setup: Setup, session_id: str) -> list[str]:
    """The ids of the session's live connections, to push its frames to."""
    return [c.connection_id for c in setup.store.list_connections(session_id)]


def forget(setup: Setup, connection_id: str) -> None:
    """Unsubscribe a connection (closed, or gone); forgetting one that is gone is no error."""
    setup.store.delete_connection(connection_id)

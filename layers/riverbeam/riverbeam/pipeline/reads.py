"""The reads, for the session's owner (and an approver: inbox.py): anyone else, a missing record or an
id that is no UUID get the record kind's 404 (CONTRACT 3.8), never a hint that the record exists."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, get_args

from beam_store import Action, Interaction, Message, Run, Session
from beam_store.records import ActionStatus

from ..errors import BeamError
from .inbox import readable_action, readable_session
from .intake import invalid, normal_uuid
from .setup import Setup

ACTION_STATUSES: tuple[str, ...] = get_args(ActionStatus)
_CURSOR = re.compile(r"^([a-z]+)#[0-9T:.Z-]+#[0-9a-f-]{36}$")


def owned_session(setup: Setup, session_id: str, user_id: str, code: str, what: str) -> Session:
    normal = normal_uuid(session_id)
    session = setup.store.get_session(normal) if normal else None
    if session is None or session.user_id != user_id:
        raise BeamError(code, f"{what} not found")
    return session


def session(setup: Setup, session_id: str, user_id: str) -> Session:
    return owned_session(setup, session_id, user_id, "BEM-020", f"session {session_id}")


def messages(
    setup: Setup, session_id: str, user_id: str, after_seq: int, limit: int | None, groups: Sequence[str] = ()
) -> list[Message]:
    """The owner's, or an approver's of one of its actions (inbox.py)."""
    found = readable_session(setup, session_id, user_id, groups)
    return setup.store.list_messages(found.session_id, after_seq=after_seq, limit=limit)


def interaction(setup: Setup, interaction_id: str, user_id: str) -> Interaction:
    found = setup.store.get_interaction(normal) if (normal := normal_uuid(interaction_id)) else None
    owned_session(
        setup, found.session_id if found else "", user_id, "BEM-022", f"interaction {interaction_id}"
    )
    assert found is not None
    return found


def run(setup: Setup, run_id: str, user_id: str) -> Run:
    found = setup.store.get_run(normal) if (normal := normal_uuid(run_id)) else None
    owned_session(setup, found.session_id if found else "", user_id, "BEM-023", f"run {run_id}")
    assert found is not None
    return found


def frames(
    setup: Setup, run_id: str, user_id: str, after_seq: int, limit: int | None
) -> list[dict[str, Any]]:
    """A streamed run's kept frames after `after_seq`, for a subscriber that connected late."""
    found = run(setup, run_id, user_id)
    return setup.store.list_frames(found.run_id, after_seq=after_seq, limit=limit)


def action(setup: Setup, action_id: str, user_id: str, groups: Sequence[str] = ()) -> Action:
    """The owner's, or an approver's (inbox.py)."""
    found = setup.store.get_action(normal) if (normal := normal_uuid(action_id)) else None
    if found is None or not readable_action(found, user_id, groups):
        raise BeamError("BEM-027", f"action {action_id} not found")
    return found


def session_actions(
    setup: Setup, session_id: str, user_id: str, status: str | None, after: str | None, limit: int | None
) -> list[Action]:
    """The session's actions for an approval inbox: with `status` only, where given (BEM-001 for a status
    actions never have), after the cursor `after` (the last page's `next_after`)."""
    if status is not None and status not in ACTION_STATUSES:
        raise invalid([("status", f"not one of {', '.join(ACTION_STATUSES)}")])
    cursor = _CURSOR.match(after) if after is not None else None
    if after is not None and (
        cursor is None or cursor.group(1) not in ACTION_STATUSES or status not in (None, cursor.group(1))
    ):
        raise invalid([("after", "not a cursor of this list")])
    found = session(setup, session_id, user_id)
    return setup.store.list_session_actions(
        found.session_id,
        status=status,  # type: ignore[arg-type]  # checked above
        after=after,
        limit=limit,
    )

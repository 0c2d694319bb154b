"""What an approver reads (CONTRACT 11): the actions they may answer across sessions (their inbox), and,
of a session that is not theirs, the actions they may answer and its messages; nothing else of it. Anyone
else is told, as reads.py tells them, that the record does not exist."""

from __future__ import annotations

import re
from collections.abc import Sequence

from beam_store import Action, Session
from beam_store.approvers import ApprovalPage, caller_principals, may_approve

from ..errors import BeamError
from .intake import invalid, normal_uuid
from .setup import Setup

DEFAULT_LIMIT = 50
MAX_LIMIT = 100
_CURSOR = re.compile(r"^[0-9T:.Z-]+#[0-9a-f-]{36}$")


def readable_action(action: Action | None, user_id: str, groups: Sequence[str]) -> bool:
    """The session's owner reads its actions; an approver, those they may answer."""
    return action is not None and (action.user_id == user_id or may_approve(action, user_id, groups))


def readable_session(setup: Setup, session_id: str, user_id: str, groups: Sequence[str]) -> Session:
    """The session, for its owner or for an approver of one of its actions (BEM-020 for anyone else)."""
    normal = normal_uuid(session_id)
    session = setup.store.get_session(normal) if normal else None
    if session is not None and session.user_id != user_id:
        actions = setup.store.list_session_actions(session.session_id)
        session = session if any(may_approve(a, user_id, groups) for a in actions) else None
    if session is None:
        raise BeamError("BEM-020", f"session {session_id} not found")
    return session


def approvals(
    setup: Setup,
    user_id: str,
    groups: Sequence[str],
    status: str = "pending",
    cursor: str | None = None,
    limit: int | None = None,
) -> ApprovalPage:
    """The pending actions the caller may answer (not voted on yet), across sessions, newest first, after
    `cursor` (the page before's); BEM-001 for another status, a cursor that is not one, a limit out of
    1..100."""
    if status != "pending":
        raise invalid([("status", "only pending actions are waiting for an approver")])
    if cursor is not None and not _CURSOR.match(cursor):
        raise invalid([("cursor", "not a cursor of this list")])
    if limit is not None and not 1 <= limit <= MAX_LIMIT:
        raise invalid([("limit", f"not within 1..{MAX_LIMIT}")])
    principals = caller_principals(user_id, groups)
    page_size = limit or DEFAULT_LIMIT
    page = setup.store.list_answerable(principals, before=cursor, limit=page_size, now=setup.now())
    # what the caller voted on is no longer theirs to answer (a second vote is refused), nor what they
    # asked for where four eyes rule them out (listed under a group of theirs): only what they may approve
    answerable = [
        a
        for a in page.actions
        if all(v.user_id != user_id for v in a.votes) and may_approve(a, user_id, groups)
    ]
    return page._replace(actions=answerable)

"""InMemoryStore's votes and approver inbox (CONTRACT 11), under the store's one lock."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from .approvers import ApprovalPage, action_principals, approval_cursor, inbox_page
from .conflicts import action_conflict
from .records import Action, overdue


class InboxInMemory:
    """Mixed into InMemoryStore, whose lock and actions it reads and writes."""

    _lock: threading.Lock
    _actions: dict[str, Action]

    def add_votes(self, actions: Sequence[Action], now: str) -> None:
        """Each action's votes as given (its last vote new), all or none: each must still be pending, in
        its interaction and session, not past its time, and hold the votes before the new one."""
        with self._lock:
            for wanted in actions:
                current = self._actions.get(wanted.action_id)
                found = None if current is None else current.model_copy(deep=True)
                conflict = action_conflict("resolve", wanted, found, "", now=now)
                if conflict is not None:
                    raise conflict
            for wanted in actions:
                stored = self._actions[wanted.action_id]
                update = {"votes": list(wanted.votes), "updated_at": now}
                self._actions[wanted.action_id] = stored.model_copy(deep=True, update=update)

    def list_answerable(
        self,
        principals: Sequence[str],
        *,
        before: str | None = None,
        limit: int | None = None,
        now: str | None = None,
    ) -> ApprovalPage:
        """The pending actions any of `principals` may answer (not past their time at `now`), newest
        first, before the cursor `before`."""
        if limit is not None and limit <= 0:
            return ApprovalPage([], None)
        wanted = set(principals)
        with self._lock:
            found = [
                a.model_copy(deep=True)
                for a in self._actions.values()
                if a.status == "pending"
                and wanted & set(action_principals(a))
                and (before is None or approval_cursor(a) < before)
                and not (now and overdue(a, now))
            ]
        return inbox_page(found, limit, full=False)

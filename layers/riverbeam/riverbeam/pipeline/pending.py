"""What waits for a person across every session, for the approvals' metrics: how many actions are pending
and how long the oldest has waited. Read from the store's index of pending actions (the sweep's), a page
at a time; people's decisions bound how many there are, and a bound on the pages keeps a backlog's count
from costing a sweep more than it should (the count then says "at least")."""

from __future__ import annotations

from datetime import datetime
from typing import NamedTuple

from beam_store.records import overdue_cursor

from .setup import Setup

PAGE = 500
MAX_PAGES = 20
# later than any action's expires_at: the overdue list "by then" is every pending action
END_OF_TIME = "9999-12-31T23:59:59.999999Z"


class Waiting(NamedTuple):
    actions: int
    oldest_age_seconds: float
    # False where MAX_PAGES were read and more remained: `actions` is a lower bound
    complete: bool


def waiting(setup: Setup) -> Waiting:
    """The pending actions of every session: how many, and the oldest one's age by the setup's clock.
    Paged as the sweep pages the same list (a short page is the last)."""
    count, after = 0, None
    asked: list[str] = []
    for _ in range(MAX_PAGES):
        page = setup.store.list_overdue_actions(END_OF_TIME, after=after, limit=PAGE)
        count += len(page)
        asked = [min([*asked, *(a.created_at for a in page)])] if page else asked
        if len(page) < PAGE:
            return Waiting(count, _age(setup, asked), complete=True)
        after = overdue_cursor(page[-1])
    return Waiting(count, _age(setup, asked), complete=False)


def _age(setup: Setup, oldest: list[str]) -> float:
    """Seconds since the oldest of `oldest` (a time or none) was asked for; 0 with none."""
    if not oldest:
        return 0.0
    return max(0.0, (setup.clock() - datetime.fromisoformat(oldest[0])).total_seconds())

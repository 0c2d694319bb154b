"""Time in the policy's context (CONTRACT 17): `now`, the moment a call is decided in the agent's time zone,
and `calls`, how many calls of the tool ran in the session in the last hour and day, so a file can say "not
outside office hours" or "at most 3 unattended pushes an hour":

    forbid (principal, action == Action::"run_unattended", resource == Tool::"git_push")
      when { context.calls.hour >= 3 };
    forbid (principal, action, resource == Tool::"deploy")
      when { context.now.weekday > 5 || context.now.hour < 9 || context.now.hour >= 17 };

`now.hour` and `now.minute` are Longs, `now.weekday` a Long (Monday 1 ... Sunday 7, ISO), `now.date`
`YYYY-MM-DD`. Both are in every decision's context, so a rule that reads them never fails on their absence
(which would deny the call: the policy fails closed)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from functools import cache
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

HOUR, DAY = timedelta(hours=1), timedelta(days=1)
NO_CALLS: Mapping[str, int] = {"hour": 0, "day": 0}


@cache
def zone(name: str) -> ZoneInfo:
    """The IANA time zone `name`; ValueError naming it where there is none of that name."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown time zone {name!r} (an IANA name such as Europe/Paris or UTC)") from None


def now_context(moment: datetime, timezone: str = "UTC") -> dict[str, Any]:
    local = moment.astimezone(zone(timezone))
    return {
        "hour": local.hour,
        "minute": local.minute,
        "weekday": local.isoweekday(),
        "date": local.date().isoformat(),
    }


def calls_context(ran_at: Iterable[datetime], moment: datetime) -> dict[str, int]:
    """How many of the moments a tool's calls ran at fall in the rolling hour and day before `moment`."""
    times = list(ran_at)
    return {
        "hour": sum(1 for t in times if moment - HOUR < t <= moment),
        "day": sum(1 for t in times if moment - DAY < t <= moment),
    }

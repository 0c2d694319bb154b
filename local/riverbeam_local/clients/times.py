"""Times as a person reads them: `14:05 (3 minutes ago)` in the local time zone, not a raw ISO string."""

from __future__ import annotations

from datetime import UTC, datetime

from ..display import visible


def _ago(seconds: float) -> str:
    if seconds < 60:
        return "just now"
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size:
            count = int(seconds // size)
            return f"{count} {unit}{'' if count == 1 else 's'} ago"
    return "just now"  # not reached: seconds >= 60 has minutes


def said_when(value: object, now: datetime | None = None) -> str:
    """`value` (an ISO 8601 time) as `14:05 (3 minutes ago)` in local time, with its date when it is not
    today's; a value that is not a time is shown as it is (escaped); nothing for none."""
    if not value:
        return ""
    try:
        at = datetime.fromisoformat(str(value))
    except ValueError:
        return visible(str(value)[:40])
    if at.tzinfo is None:
        at = at.replace(tzinfo=UTC)  # the API's times are UTC
    now = now or datetime.now(UTC)
    local, today = at.astimezone(), now.astimezone()
    shown = local.strftime("%H:%M") if local.date() == today.date() else local.strftime("%Y-%m-%d %H:%M")
    seconds = (now - at).total_seconds()
    return shown if seconds < 0 else f"{shown} ({_ago(seconds)})"

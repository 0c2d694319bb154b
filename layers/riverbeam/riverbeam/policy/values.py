"""A tool call as a Cedar request: the entities (the user in its groups, the tool) and the context.

The args are those that run, validated and as their canonical JSON reads back (what is hashed). Numbers
reach Cedar as numbers: an integer as a Long, a number with a fraction part as a `decimal` extension value.
A number Cedar cannot hold (an integer beyond 64 bits, a decimal with more than four places or beyond
Cedar's range, NaN or infinity) makes the call's args unfit (UnfitArgs): it is refused, never judged as
something else. A record whose only key is `__entity`, `__extn` or `__expr` would be read by Cedar's JSON as
an entity or an extension value (an agent forging `User::"admin"` inside its args): it is given as its JSON
text instead. A null is left out (so `has` is false)."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

ESCAPES = frozenset({"__entity", "__extn", "__expr"})
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
# Cedar's decimal: a 64-bit integer of ten-thousandths, at most four digits after the point
DECIMAL_PLACES = 4
DECIMAL_MIN, DECIMAL_MAX = Decimal(LONG_MIN).scaleb(-4), Decimal(LONG_MAX).scaleb(-4)


class UnfitArgs(ValueError):
    """Args holding a value the policy cannot read as it is: `field` names it (`args.replicas`)."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field, self.problem = field, problem


def cedar_value(value: Any, field: str = "args") -> Any:
    """`value` (JSON data) as a Cedar value; None where it has none (a null). `field` names it in an
    UnfitArgs."""
    if value is None:
        return None
    if isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        if not LONG_MIN <= value <= LONG_MAX:
            raise UnfitArgs(field, "an integer beyond what the approval policy reads (64 bits)")
        return value
    if isinstance(value, float):
        return cedar_decimal(value, field)
    if isinstance(value, Mapping):
        if len(value) == 1 and next(iter(value)) in ESCAPES:
            return json.dumps(value, sort_keys=True, ensure_ascii=False)
        record = {str(k): cedar_value(v, f"{field}.{k}") for k, v in value.items()}
        return {k: v for k, v in record.items() if v is not None}
    if isinstance(value, list | tuple):
        items = [cedar_value(v, f"{field}.{i}") for i, v in enumerate(value)]
        return [v for v in items if v is not None]
    return str(value)


def cedar_decimal(number: float, field: str) -> dict[str, Any]:
    """A number with a fraction part as Cedar's `decimal("12.5")`, where Cedar's decimal holds it."""
    if not math.isfinite(number):
        raise UnfitArgs(field, "not a finite number")
    exact = Decimal(repr(number))  # the shortest text that reads back as this float: what JSON sent
    exponent = exact.as_tuple().exponent
    assert isinstance(exponent, int)  # a finite number's
    places = max(-exponent, 1)
    if places > DECIMAL_PLACES or not DECIMAL_MIN <= exact <= DECIMAL_MAX:
        raise UnfitArgs(field, "a number the approval policy cannot read (Cedar's decimal: four places)")
    return {"__extn": {"fn": "decimal", "arg": f"{exact:.{places}f}"}}


def uid(kind: str, name: str) -> dict[str, str]:
    """An entity uid in Cedar's JSON form, which takes any string as the id (no escaping to get wrong)."""
    return {"type": kind, "id": name}


def entities(user_id: str, groups: Iterable[str], tool: str) -> list[dict[str, Any]]:
    """The user with its groups as parents, each group, and the tool."""
    distinct = sorted(set(groups))
    user = {"uid": uid("User", user_id), "attrs": {}, "parents": [uid("Group", g) for g in distinct]}
    members = [{"uid": uid("Group", g), "attrs": {}, "parents": []} for g in distinct]
    return [user, *members, {"uid": uid("Tool", tool), "attrs": {}, "parents": []}]


def requests(user_id: str, tool: str, context: dict[str, Any]) -> list[dict[str, Any]]:
    """The two requests that decide a call: `run`, then `run_unattended`."""
    return [
        {
            "principal": uid("User", user_id),
            "action": uid("Action", action),
            "resource": uid("Tool", tool),
            "context": context,
        }
        for action in ("run", "run_unattended")
    ]

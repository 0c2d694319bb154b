"""A tool call as a Cedar request: the entities (the user in its groups, the tool) and the context.

The args come from a model, so they are made plain Cedar values here: Cedar's JSON reads a record whose
only key is `__entity`, `__extn` or `__expr` as an entity or an extension value, which would let an
agent forge `User::"admin"` inside its args. Such a record, and what Cedar has no value for (null, a
number that is not a 64-bit integer), is given as a string instead (null: left out)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

ESCAPES = frozenset({"__entity", "__extn", "__expr"})
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1


def cedar_value(value: Any) -> Any:
    """`value` (JSON data) as a Cedar value; None where it has none (a null)."""
    if value is None:
        return None
    if isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        return value if LONG_MIN <= value <= LONG_MAX else str(value)
    if isinstance(value, float):
        return json.dumps(value)
    if isinstance(value, Mapping):
        if len(value) == 1 and next(iter(value)) in ESCAPES:
            return json.dumps(value, sort_keys=True, ensure_ascii=False)
        record = {str(k): cedar_value(v) for k, v in value.items()}
        return {k: v for k, v in record.items() if v is not None}
    if isinstance(value, list | tuple):
        items = [cedar_value(v) for v in value]
        return [v for v in items if v is not None]
    return str(value)


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

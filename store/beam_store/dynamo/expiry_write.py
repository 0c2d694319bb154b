"""The expiry's conditional write: a pending action past its time stored `expired`, with the response that
says nobody answered in time (records.expired), and taken out of the pending actions' index (gsi3)."""

from __future__ import annotations

from typing import Any

from ..records import Action
from .expressions import Expression
from .items import (
    PENDING_INDEX_ATTRIBUTES,
    action_gsi1sk,
    action_gsi2sk,
    action_key,
    serialize,
    serialize_json,
)


def expiry_update(table_name: str, expired: Action, now: str) -> dict[str, Any]:
    """The UpdateItem that stores `expired`: refused unless the action is still pending and past its time
    at `now` (the loser learns why from the item returned)."""
    assert expired.response is not None
    e = Expression()
    condition = e.all(e.eq("status", "pending"), f"{e.name('expires_at')} <= {e.value(serialize(now))}")
    changes = {
        "status": serialize("expired"),
        "updated_at": serialize(now),
        "response": serialize_json(expired.response.model_dump(mode="json", exclude_none=True)),
        "gsi1sk": serialize(action_gsi1sk(expired)),
        "gsi2sk": serialize(action_gsi2sk(expired)),
    }
    return e.apply(
        {
            "TableName": table_name,
            "Key": action_key(expired.action_id),
            "UpdateExpression": f"{e.sets(changes)} {e.removes(*PENDING_INDEX_ATTRIBUTES)}",
            "ConditionExpression": condition,
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
    )

"""What the sweep's settle reads and writes (expiry.settle): whether an interaction still waits, read from
the table rather than from gsi1 (eventually consistent: an action a run asked for a moment ago may not be
there yet), and the conditional write that closes it, with the session's `open#<id>`, in one transaction."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from botocore.exceptions import ClientError

from ..records import Action, Interaction, InteractionStatus
from .expressions import Expression
from .items import (
    WAITING_ATTRIBUTE,
    deserialize_item,
    interaction_key,
    load,
    open_attribute,
    serialize,
    session_key,
)

if TYPE_CHECKING:
    from .store import DynamoBeamStore


def interaction_waiting(
    store: DynamoBeamStore, interaction_id: str
) -> tuple[Interaction | None, list[Action]]:
    """The interaction read consistently, then each action that may be pending read again from the table:
    those its last run left pending (its `waiting_on`, written with the run's end) and those gsi1 lists as
    pending (older ones, or any a runner left pending without asking again)."""
    item = store.client.get_item(
        TableName=store.table_name, Key=interaction_key(interaction_id), ConsistentRead=True
    ).get("Item")
    if not item:
        return None, []
    waiting = list(deserialize_item(item).get(WAITING_ATTRIBUTE, []))
    listed = [a.action_id for a in store.list_actions(interaction_id) if a.status == "pending"]
    found = (store.get_action(action_id) for action_id in dict.fromkeys([*waiting, *listed]))
    pending = [a for a in found if a is not None and a.status == "pending"]
    return load(Interaction, item), sorted(pending, key=lambda a: (a.created_at, a.action_id))


def settle(
    store: DynamoBeamStore,
    interaction_id: str,
    status: InteractionStatus,
    session_id: str,
    seen_updated_at: str,
    now: str,
) -> bool:
    """The interaction's settle as one transaction (settle_items); False where its condition failed."""
    items = settle_items(store.table_name, interaction_id, status, session_id, seen_updated_at, now)
    try:
        store.client.transact_write_items(TransactItems=cast(Any, items))
    except ClientError as error:
        if error.response["Error"]["Code"] != "TransactionCanceledException":
            raise
        return False
    return True


def settle_items(
    table: str,
    interaction_id: str,
    status: InteractionStatus,
    session_id: str,
    seen_updated_at: str,
    now: str,
) -> list[dict[str, Any]]:
    """The interaction's new status, on its condition (in the session, no run holds it, nobody wrote it
    since it was read), and for an ended status the session's `open#<id>` removed."""
    e = Expression()
    condition = e.all(
        e.exists(),
        e.eq("session_id", session_id),
        e.missing("active_run_id"),
        e.eq("updated_at", seen_updated_at),
    )
    update = e.sets({"status": serialize(status), "updated_at": serialize(now)})
    key = interaction_key(interaction_id)
    items = [
        {
            "Update": {
                "TableName": table,
                **e.apply({"Key": key, "UpdateExpression": update, "ConditionExpression": condition}),
            }
        }
    ]
    if status != "in_progress":
        s = Expression()
        removed = {
            "Key": session_key(session_id),
            "UpdateExpression": s.removes(open_attribute(interaction_id)),
        }
        items.append(
            {"Update": {"TableName": table, **s.apply(removed | {"ConditionExpression": s.exists()})}}
        )
    return items

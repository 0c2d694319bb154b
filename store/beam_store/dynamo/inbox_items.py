"""The approvers' inbox on DynamoDB (CONTRACT 11): gsi4, keyed by principal, newest first.

A pending action is in its owner's inbox through gsi4 attributes on the action item itself (items.py:
pending_index), and in each other approver's through an entry item beside it, in the action's partition:

    ACTION#<id> / INBOX#<principal>   a copy of the pending action; gsi4: INBOX#<principal> /
                                      <created_at>#<id>

The entries are written in the same transaction as the action: put when it is asked for and again with
each vote (so the inbox shows the votes so far), deleted when it is resolved, cancelled or expired. The
inbox also leaves out what is past its time and not expired yet.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, cast

from botocore.exceptions import ClientError

from ..approvers import ApprovalPage, inbox_page, listed_principals
from ..records import Action, overdue
from ..store_errors import ActionConflict
from .items import GSI4, Item, inbox_index, load, record_attrs, serialize

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient
else:
    DynamoDBClient = Any


def entry_key(action_id: str, principal: str) -> Item:
    return {"pk": {"S": f"ACTION#{action_id}"}, "sk": {"S": f"INBOX#{principal}"}}


def entry_writes(action: Action, table: str) -> list[dict[str, Any]]:
    """The TransactItems that keep the action's entries as it is now: put while pending, else deleted."""
    writes: list[dict[str, Any]] = []
    for principal in listed_principals(action):
        key = entry_key(action.action_id, principal)
        if action.status == "pending":
            item = (
                key | record_attrs(action) | inbox_index(action, principal) | {"entity": serialize("inbox")}
            )
            writes.append({"Put": {"TableName": table, "Item": item}})
        else:
            writes.append({"Delete": {"TableName": table, "Key": key}})
    return writes


class InboxQueries:
    """Mixed into DynamoBeamStore: the inbox's Query and the write of votes that do not resolve."""

    client: DynamoDBClient
    table_name: str

    get_action: Callable[[str], Action | None]

    def list_answerable(
        self,
        principals: Sequence[str],
        *,
        before: str | None = None,
        limit: int | None = None,
        now: str | None = None,
    ) -> ApprovalPage:
        """One Query of gsi4 per principal, newest first (an index lags: a listed action may have been
        answered a moment ago, and its conditional write then decides)."""
        if limit is not None and limit <= 0:
            return ApprovalPage([], None)
        found: list[Action] = []
        full = False
        for principal in dict.fromkeys(principals):
            items = self._inbox_query(principal, before, limit)
            full = full or (limit is not None and len(items) >= limit)
            found += [a for a in (load(Action, i) for i in items) if a is not None]
        answerable = [a for a in found if a.status == "pending" and not (now and overdue(a, now))]
        return inbox_page(answerable, limit, full)

    def _inbox_query(self, principal: str, before: str | None, limit: int | None) -> list[Item]:
        values: dict[str, Any] = {":pk": {"S": f"INBOX#{principal}"}}
        condition = "gsi4pk = :pk"
        if before is not None:
            condition += " AND gsi4sk < :before"
            values[":before"] = {"S": before}
        params: dict[str, Any] = {
            "TableName": self.table_name,
            "IndexName": GSI4,
            "KeyConditionExpression": condition,
            "ExpressionAttributeValues": values,
            "ScanIndexForward": False,
        }
        if limit is not None:
            params["Limit"] = limit
        return list(self.client.query(**params).get("Items", []))

    def add_votes(self, actions: Sequence[Action], now: str) -> None:
        """One TransactWriteItems: each action's votes on its condition (transaction.resolve_update), and
        its entries with them. A refused write raises ActionConflict with the action as found."""
        from .transaction import resolve_update  # transaction.py imports this module

        items: list[dict[str, Any]] = []
        for action in actions:
            update = resolve_update(action, now) | {"ReturnValuesOnConditionCheckFailure": "ALL_OLD"}
            items.append({"Update": {"TableName": self.table_name, **update}})
            items += entry_writes(action.model_copy(update={"updated_at": now}), self.table_name)
        try:
            self.client.transact_write_items(TransactItems=cast(Any, items))
        except ClientError as error:
            if error.response["Error"]["Code"] != "TransactionCanceledException":
                raise
            raise self._vote_conflict(actions, items, error) from None

    def _vote_conflict(
        self, actions: Sequence[Action], items: list[dict[str, Any]], error: ClientError
    ) -> ActionConflict:
        """The first action whose condition failed, as found; where none did (a transaction conflict
        with another writer), the first action read again: its caller looks at it afresh."""
        reasons = cast(list[dict[str, Any]], error.response.get("CancellationReasons") or [])
        by_key = {
            str(item["Update"]["Key"]["pk"]["S"]): reason
            for item, reason in zip(items, reasons, strict=False)
            if "Update" in item
        }
        for action in actions:
            reason = by_key.get(f"ACTION#{action.action_id}", {})
            if reason.get("Code") == "ConditionalCheckFailed":
                current = load(Action, reason.get("Item"))
                return ActionConflict(action.action_id, current or self.get_action(action.action_id))
        first = actions[0].action_id
        return ActionConflict(first, self.get_action(first))

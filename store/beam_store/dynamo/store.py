"""DynamoBeamStore: the records in one on-demand DynamoDB table (items.py draws its items). Every read is
a GetItem or a Query; a step is one TransactWriteItems (transaction.py), sent again while it loses to
other writers of its session, with one backoff policy for every retry; requests.py: idempotency records;
frames.py: runs' frames; content.py: content too large for an item, kept in S3."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, cast

import boto3
from botocore.exceptions import ClientError

from ..protocol import ExpiryEvents
from ..records import (
    Action,
    ActionStatus,
    Connection,
    Interaction,
    InteractionStatus,
    Message,
    Run,
    Session,
    overdue,
)
from ..records import expired as expired_record
from ..step_write import StepWrite, numbered
from ..store_errors import RunClaimed, RunNotRunning, StoreBusy
from .content import ContentStore, projected_sizes, transaction_writes
from .expiry_write import expiry_update
from .expressions import Expression
from .frame_items import RunFrames
from .grants import remove_grant
from .inbox_items import InboxQueries, entry_writes
from .items import (
    GSI1,
    GSI2,
    GSI3,
    MAX_SEQ,
    PENDING_KEY,
    Item,
    action_key,
    connection_item,
    connection_key,
    deserialize_item,
    interaction_key,
    load,
    message_sk,
    run_key,
    serialize,
    session_item,
    session_key,
    state_key,
)
from .outbox_items import outbox_items
from .requests import RequestRecords
from .retry import MAX_ATTEMPTS, MAX_SECONDS, STEP_BACKOFF
from .settle import interaction_waiting, settle
from .table import ensure_table
from .transaction import refused, transact_items

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient
    from mypy_boto3_s3.client import S3Client
else:
    DynamoDBClient = S3Client = Any


class DynamoBeamStore(RequestRecords, RunFrames, InboxQueries):
    def __init__(
        self,
        client: DynamoDBClient,
        table_name: str,
        *,
        max_attempts: int = MAX_ATTEMPTS,
        max_seconds: float = MAX_SECONDS,
        content_bucket: str | None = None,
        s3_client: S3Client | None = None,
    ) -> None:
        self.client = client
        self.table_name = table_name
        # where content too large for an item goes (content.py); None: such an item is refused
        self.content = ContentStore(content_bucket, s3_client)
        # how long one step may keep losing to other writers of its session before StoreBusy
        self.max_attempts = max_attempts
        self.max_seconds = max_seconds

    @classmethod
    def connect(
        cls,
        table_name: str,
        *,
        client: DynamoDBClient | None = None,
        content_bucket: str | None = None,
        s3_client: S3Client | None = None,
    ) -> DynamoBeamStore:
        """The store on `table_name`, creating the table (with its index and TTL) if it is missing. Large
        content goes to `content_bucket` (default: the environment's CONTENT_BUCKET; the bucket must exist)
        through `s3_client` (default: boto3's, made on first use)."""
        client = client or boto3.client("dynamodb")
        ensure_table(client, table_name)
        bucket = content_bucket if content_bucket is not None else os.environ.get("CONTENT_BUCKET")
        return cls(client, table_name, content_bucket=bucket, s3_client=s3_client)

    # reads

    def _get(self, key: Item) -> Item | None:
        response = self.client.get_item(TableName=self.table_name, Key=key, ConsistentRead=True)
        return self.content.inline(response.get("Item"))

    def get_session(self, session_id: str) -> Session | None:
        return load(Session, self._get(session_key(session_id)))

    def get_interaction(self, interaction_id: str) -> Interaction | None:
        return load(Interaction, self._get(interaction_key(interaction_id)))

    def get_run(self, run_id: str) -> Run | None:
        return load(Run, self._get(run_key(run_id)))

    def get_action(self, action_id: str) -> Action | None:
        return load(Action, self._get(action_key(action_id)))

    def get_state(self, interaction_id: str) -> Any:
        item = self._get(state_key(interaction_id))
        return deserialize_item(item).get("state") if item else None

    def _query(self, limit: int | None = None, **params: Any) -> Iterator[Item]:
        params["TableName"] = self.table_name
        returned = 0
        while True:
            if limit is not None:
                params["Limit"] = limit - returned
            page = self.client.query(**params)
            for item in page.get("Items", []):
                returned += 1
                yield self.content.inline(item) or item
            if "LastEvaluatedKey" not in page or (limit is not None and returned >= limit):
                return
            params["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def _query_range(self, pk: str, lo: str, hi: str, limit: int | None = None) -> Iterator[Item]:
        return self._query(
            limit,
            KeyConditionExpression="pk = :pk AND sk BETWEEN :lo AND :hi",
            ExpressionAttributeValues={":pk": {"S": pk}, ":lo": {"S": lo}, ":hi": {"S": hi}},
            ConsistentRead=True,
        )

    def _query_index(self, pk: str, prefix: str) -> Iterator[Item]:
        return self._query(
            IndexName=GSI1,
            KeyConditionExpression="gsi1pk = :pk AND begins_with(gsi1sk, :prefix)",
            ExpressionAttributeValues={":pk": {"S": pk}, ":prefix": {"S": prefix}},
        )

    def list_messages(
        self, session_id: str, *, after_seq: int = 0, limit: int | None = None
    ) -> list[Message]:
        if (limit is not None and limit <= 0) or after_seq >= MAX_SEQ:
            return []
        lo, hi = message_sk(after_seq + 1), message_sk(MAX_SEQ)
        items = self._query_range(f"SESSION#{session_id}", lo, hi, limit)
        return [Message.model_validate(deserialize_item(i)) for i in items]

    def get_session_with_messages(
        self, session_id: str, *, last: int | None = None
    ) -> tuple[Session | None, list[Message]]:
        """One Query of the session's partition. With `last`, newest first and at most `last` + 1 items:
        the session item (sk `SESSION`) sorts after its messages (`MSG#...`), so it comes first, then the
        last messages."""
        session: Session | None = None
        messages: list[Message] = []
        if last is not None and last < 0:
            last = 0
        items = self._query(
            None if last is None else last + 1,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": {"S": f"SESSION#{session_id}"}},
            ConsistentRead=True,
            ScanIndexForward=last is None,
        )
        for item in items:
            if item["sk"]["S"] == "SESSION":
                session = load(Session, item)
            else:
                messages.append(Message.model_validate(deserialize_item(item)))
        if last is None:
            return session, messages
        return session, messages[:last][::-1]  # a session that is missing leaves room for one more

    def list_runs(self, interaction_id: str) -> list[Run]:
        items = self._query_index(f"INTERACTION#{interaction_id}", "RUN#")
        return [Run.model_validate(deserialize_item(i)) for i in items]

    def list_actions(self, interaction_id: str) -> list[Action]:
        items = self._query_index(f"INTERACTION#{interaction_id}", "ACTION#")
        return [Action.model_validate(deserialize_item(i)) for i in items]

    def list_session_actions(
        self,
        session_id: str,
        *,
        status: ActionStatus | None = None,
        after: str | None = None,
        limit: int | None = None,
    ) -> list[Action]:
        if limit is not None and limit <= 0:
            return []
        prefix = f"ACTION#{status}#" if status else "ACTION#"
        params: dict[str, Any] = {
            "IndexName": GSI2,
            "KeyConditionExpression": "gsi2pk = :pk AND begins_with(gsi2sk, :prefix)",
            "ExpressionAttributeValues": {":pk": {"S": f"SESSION#{session_id}"}, ":prefix": {"S": prefix}},
        }
        if after is not None:  # the page goes on after the action the cursor names
            params["ExclusiveStartKey"] = {
                **action_key(after.rsplit("#", 1)[-1]),
                "gsi2pk": {"S": f"SESSION#{session_id}"},
                "gsi2sk": {"S": f"ACTION#{after}"},
            }
        items = self._query(limit, **params)
        return [Action.model_validate(deserialize_item(i)) for i in items]

    def expire_action(
        self, action_id: str, now: str, *, outbox: ExpiryEvents | None = None
    ) -> tuple[Action | None, bool]:
        """A GetItem, then the conditional UpdateItem; with `outbox` (or approvers' inbox entries to delete),
        the update and those items in one TransactWriteItems instead (as many requests)."""
        current = self.get_action(action_id)
        if current is None or not overdue(current, now):
            return current, False
        expired = expired_record(current, now)
        update = expiry_update(self.table_name, expired, now)
        events = outbox_items(outbox(expired.model_copy(deep=True))) if outbox is not None else []
        # its events, and its other approvers' inbox entries deleted, in the same write
        also = [*({"Put": {"TableName": self.table_name, "Item": i}} for i in events)]
        also += entry_writes(expired, self.table_name)
        try:
            if also:
                self.client.transact_write_items(TransactItems=cast(Any, [{"Update": update}, *also]))
            else:
                self.client.update_item(**update)
        except ClientError as error:
            found = _expiry_lost(error)
            return load(Action, self.content.inline(found)) or self.get_action(action_id), False
        return expired, True

    def list_overdue_actions(
        self, now: str, *, after: str | None = None, limit: int | None = None
    ) -> list[Action]:
        """One Query of gsi3 per page: pending actions by expires_at, up to `now`. The index is eventually
        consistent: an action resolved a moment ago may still be listed (its conditional expiry then
        finds it resolved)."""
        if limit is not None and limit <= 0:
            return []
        params: dict[str, Any] = {
            "IndexName": GSI3,
            # `~` sorts after every character of an action id: every action expiring at `now` is in range
            "KeyConditionExpression": "gsi3pk = :pk AND gsi3sk <= :hi",
            "ExpressionAttributeValues": {":pk": {"S": PENDING_KEY}, ":hi": {"S": f"{now}#~"}},
        }
        if after is not None:  # the page goes on after the action the cursor names
            params["ExclusiveStartKey"] = {
                **action_key(after.rsplit("#", 1)[-1]),
                "gsi3pk": {"S": PENDING_KEY},
                "gsi3sk": {"S": after},
            }
        found = [Action.model_validate(deserialize_item(i)) for i in self._query(limit, **params)]
        return [a for a in found if overdue(a, now)]

    def get_interaction_waiting(self, interaction_id: str) -> tuple[Interaction | None, list[Action]]:
        return interaction_waiting(self, interaction_id)

    def settle_interaction(
        self,
        interaction_id: str,
        status: InteractionStatus,
        *,
        session_id: str,
        seen_updated_at: str,
        now: str,
    ) -> bool:
        return settle(self, interaction_id, status, session_id, seen_updated_at, now)

    def claim_run(self, run_id: str, claimed_by: str, lease_expires_at: str, now: str) -> Run:
        e = Expression()
        condition = e.all(e.eq("status", "running"), e.missing("claimed_by"))
        claim = {"claimed_by": claimed_by, "lease_expires_at": lease_expires_at, "updated_at": now}
        update = e.sets({k: serialize(v) for k, v in claim.items()})
        try:
            response = self.client.update_item(
                TableName=self.table_name,
                Key=run_key(run_id),
                **e.apply({"UpdateExpression": update, "ConditionExpression": condition}),
                ReturnValues="ALL_NEW",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as error:
            if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            current = load(Run, cast(Item | None, error.response.get("Item")))
            if current is None or current.status != "running":
                raise RunNotRunning("the run is not running") from None
            raise RunClaimed(current) from None
        claimed = load(Run, response["Attributes"])
        assert claimed is not None
        return claimed

    # sessions reserved by a subscriber, and the WebSocket connections of a session

    def remove_grant(self, session_id: str, grant_id: str, user_id: str) -> bool:
        return remove_grant(self.client, self.table_name, session_id, grant_id, user_id)

    def reserve_session(self, session: Session) -> Session:
        try:
            self.client.put_item(
                TableName=self.table_name,
                Item=session_item(session),
                ConditionExpression="attribute_not_exists(pk)",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as error:
            if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            existing = load(Session, cast(Item | None, error.response.get("Item")))
            if existing is None:  # a server that does not return the old item
                existing = self.get_session(session.session_id)
            assert existing is not None
            return existing
        return session

    def put_connection(self, connection: Connection) -> None:
        self.client.put_item(TableName=self.table_name, Item=connection_item(connection))

    def get_connection(self, connection_id: str) -> Connection | None:
        return load(Connection, self._get(connection_key(connection_id)))

    def delete_connection(self, connection_id: str) -> None:
        self.client.delete_item(TableName=self.table_name, Key=connection_key(connection_id))

    def list_connections(self, session_id: str) -> list[Connection]:
        items = self._query_index(f"SESSION#{session_id}", "CONN#")
        now = int(time.time())
        # TTL deletes lazily: an expired connection may still be read, and is skipped
        found = [Connection.model_validate(deserialize_item(i)) for i in items]
        return [c for c in found if c.expires_at > now]

    # the step

    def commit(self, step: StepWrite) -> list[Message]:
        """One transaction, sent again (with the counter it found) while it loses to other writers of its
        session, until it is written, a conflict refuses it, or the bounds are reached (StoreBusy)."""
        session_exists = step.session_op == "update"
        expected_seq = step.session.last_seq
        started = time.monotonic()
        projected = projected_sizes(step)
        for attempt in range(self.max_attempts):
            items, parts = transact_items(step, self.table_name, session_exists, expected_seq)
            # large content to S3 before the items that point at it (sent again, it is not put again)
            self.content.offload(transaction_writes(items, projected), transaction=True)
            try:
                token = str(uuid.uuid4())
                self.client.transact_write_items(TransactItems=cast(Any, items), ClientRequestToken=token)
            except ClientError as error:
                if error.response["Error"]["Code"] != "TransactionCanceledException":
                    raise
                reasons = error.response.get("CancellationReasons", [])
                current = refused(step, parts, [self.content.inline_reason(reason) for reason in reasons])
                if current is not None:
                    session_exists, expected_seq = True, current.last_seq
                if time.monotonic() - started > self.max_seconds:
                    break
                STEP_BACKOFF.wait(attempt)
                continue
            return numbered(step, expected_seq if session_exists else 0)
        raise StoreBusy(
            f"the step was refused for contention {self.max_attempts} times or for {self.max_seconds}s"
        )


def _expiry_lost(error: ClientError) -> Item | None:
    """The action as an expiry that lost its condition found it (None where the answer does not carry
    it); any other failure is raised again."""
    code = error.response["Error"]["Code"]
    if code == "ConditionalCheckFailedException":
        return cast(Item | None, error.response.get("Item"))
    # a transaction's first item is the action's update: its reason tells whether the condition failed
    reasons = cast(list[dict[str, Any]], error.response.get("CancellationReasons") or [{}])
    if code == "TransactionCanceledException" and reasons[0].get("Code") == "ConditionalCheckFailed":
        return cast(Item | None, reasons[0].get("Item"))
    raise error

"""DynamoBeamStore: the records in one on-demand DynamoDB table.

Items (pk / sk):
  SESSION#<id> / SESSION           the session, with the message counter `last_seq`
  SESSION#<id> / MSG#<seq:012d>    its messages, so one Query reads a session and its history
  INTERACTION#<id> / INTERACTION   the interaction, with `active_run_id` while a run holds it
  RUN#<id> / RUN                   a run;    gsi1: INTERACTION#<id> / RUN#<created_at>#<id>
  RUN#<id> / FRAME#<frame_seq:08d> a frame of a streamed run, JSON, with a TTL
  ACTION#<id> / ACTION             an action; gsi1: INTERACTION#<id> /
                                   ACTION#<0 pending|1 done>#<created_at>#<id>
  CONN#<id> / CONN                 a WebSocket connection, with a TTL; gsi1: SESSION#<id> / CONN#<id>

The attributes that hold JSON of any shape (a message's `content`, an action's `args`, `outcome` and
`response`, a run's `error`) are stored as one string of compact JSON, not as DynamoDB maps and lists:
a DynamoDB number has no int/float distinction (1e20 came back as an int), holds 38 digits within
1e-130..1e126 (an output of 1e300 or 10**40 could not be written), and maps nest 32 deep at most. Items
written before, with those attributes as maps and lists, are still read (their numbers as before).
"""

from __future__ import annotations

import json
import random
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

import boto3
from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from botocore.exceptions import ClientError
from pydantic import BaseModel

from .errors import (
    ActionConflict,
    InteractionBusy,
    InteractionInOtherSession,
    InteractionMissing,
    RecordExists,
    RunClaimed,
    RunNotRunning,
    SessionMissing,
    SessionOwnedByOther,
    StoreBusy,
    StoreConflict,
)
from .records import Action, Connection, Interaction, Message, Run, Session
from .step import MessageDraft, StepWrite

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient
else:
    DynamoDBClient = Any

M = TypeVar("M", bound=BaseModel)
Item = dict[str, Any]

GSI1 = "gsi1"
TTL_ATTRIBUTE = "expires_at"
TABLE_DEFINITION: dict[str, Any] = {
    "AttributeDefinitions": [
        {"AttributeName": name, "AttributeType": "S"} for name in ("pk", "sk", "gsi1pk", "gsi1sk")
    ],
    "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
    "GlobalSecondaryIndexes": [
        {
            "IndexName": GSI1,
            "KeySchema": [
                {"AttributeName": "gsi1pk", "KeyType": "HASH"},
                {"AttributeName": "gsi1sk", "KeyType": "RANGE"},
            ],
            "Projection": {"ProjectionType": "ALL"},
        }
    ],
    "BillingMode": "PAY_PER_REQUEST",
}

# bounds for a step that keeps losing to other writers of its session (optimistic seq allocation)
MAX_ATTEMPTS = 400
MAX_SECONDS = 30.0
BACKOFF_CAP_SECONDS = 0.1
_MAX_SEQ = 10**12 - 1
_MAX_FRAME = 10**8 - 1
MAX_BATCH_ATTEMPTS = 8

_serializer = TypeSerializer()
_deserializer = TypeDeserializer()


def _to_number(value: Decimal) -> int | float:
    return int(value) if value.as_tuple().exponent >= 0 else float(value)  # type: ignore[operator]


def _plain(value: Any) -> Any:
    if isinstance(value, Decimal):
        return _to_number(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def serialize(value: Any) -> Any:
    """A JSON-able value as a DynamoDB attribute value (floats become exact decimals)."""
    return _serializer.serialize(json.loads(json.dumps(value), parse_float=Decimal))


# record fields whose values are JSON of any shape, each stored as a string of compact JSON
JSON_ATTRIBUTES = frozenset({"content", "args", "outcome", "response", "error"})


def serialize_json(value: Any) -> Any:
    """A JSON value as a string attribute that gives back every value with its type (None stays NULL).

    Compact and UTF-8 as it is (ensure_ascii=False), so the stored size is the JSON's size in bytes."""
    if value is None:
        return {"NULL": True}
    return {"S": json.dumps(value, ensure_ascii=False, separators=(",", ":"))}


def serialize_attr(name: str, value: Any) -> Any:
    """A record field's value as the attribute it is stored as."""
    return serialize_json(value) if name in JSON_ATTRIBUTES else serialize(value)


def _deserialize_attr(name: str, value: Any) -> Any:
    if name in JSON_ATTRIBUTES and "S" in value:
        return json.loads(value["S"])
    # any other attribute, and a JSON field of an item written as maps and lists before
    return _plain(_deserializer.deserialize(value))


def deserialize_item(item: Item) -> dict[str, Any]:
    return {k: _deserialize_attr(k, v) for k, v in item.items()}


def _record_attrs(record: BaseModel) -> dict[str, Any]:
    return {k: serialize_attr(k, v) for k, v in record.model_dump(mode="json", exclude_none=True).items()}


def _load(model: type[M], item: Item | None) -> M | None:
    return None if not item else model.model_validate(deserialize_item(item))


def _session_key(session_id: str) -> Item:
    return {"pk": {"S": f"SESSION#{session_id}"}, "sk": {"S": "SESSION"}}


def _message_sk(seq: int) -> str:
    return f"MSG#{seq:012d}"


def _frame_sk(frame_seq: int) -> str:
    return f"FRAME#{frame_seq:08d}"


def _frame_item(run_id: str, frame: Mapping[str, Any], expires_at: int) -> Item:
    return {
        "pk": {"S": f"RUN#{run_id}"},
        "sk": {"S": _frame_sk(int(frame["frame_seq"]))},
        "entity": {"S": "frame"},
        "frame": {"S": json.dumps(frame)},
        TTL_ATTRIBUTE: {"N": str(expires_at)},
    }


def _interaction_key(interaction_id: str) -> Item:
    return {"pk": {"S": f"INTERACTION#{interaction_id}"}, "sk": {"S": "INTERACTION"}}


def _run_key(run_id: str) -> Item:
    return {"pk": {"S": f"RUN#{run_id}"}, "sk": {"S": "RUN"}}


def _action_key(action_id: str) -> Item:
    return {"pk": {"S": f"ACTION#{action_id}"}, "sk": {"S": "ACTION"}}


def _connection_key(connection_id: str) -> Item:
    return {"pk": {"S": f"CONN#{connection_id}"}, "sk": {"S": "CONN"}}


def _action_gsi1sk(action: Action) -> str:
    return f"ACTION#{0 if action.status == 'pending' else 1}#{action.created_at}#{action.action_id}"


@dataclass
class _Expr:
    """Placeholders for one expression, so no attribute name clashes with a reserved word."""

    names: dict[str, str] = field(default_factory=dict)
    values: dict[str, Any] = field(default_factory=dict)

    def name(self, attr: str) -> str:
        placeholder = f"#n{len(self.names)}"
        self.names[placeholder] = attr
        return placeholder

    def value(self, attr_value: Any) -> str:
        placeholder = f":v{len(self.values)}"
        self.values[placeholder] = attr_value
        return placeholder

    def eq(self, attr: str, value: Any) -> str:
        return f"{self.name(attr)} = {self.value(value)}"

    def sets(self, attrs: dict[str, Any], *, keep_existing: bool = False) -> str:
        parts = []
        for attr, value in attrs.items():
            n, v = self.name(attr), self.value(value)
            parts.append(f"{n} = if_not_exists({n}, {v})" if keep_existing else f"{n} = {v}")
        return "SET " + ", ".join(parts)

    def apply(self, op: dict[str, Any]) -> dict[str, Any]:
        if self.names:
            op["ExpressionAttributeNames"] = self.names
        if self.values:
            op["ExpressionAttributeValues"] = self.values
        return op


Tag = tuple[Literal["resolve", "outcome", "open", "session", "interaction", "run", "message", "frame"], str]


class _Retry(Exception):
    """The step may succeed if sent again (seq moved, session appeared, transaction conflict)."""


class DynamoBeamStore:
    def __init__(
        self,
        client: DynamoDBClient,
        table_name: str,
        *,
        max_attempts: int = MAX_ATTEMPTS,
        max_seconds: float = MAX_SECONDS,
    ) -> None:
        self.client = client
        self.table_name = table_name
        # how long one step may keep losing to other writers of its session before StoreBusy
        self.max_attempts = max_attempts
        self.max_seconds = max_seconds

    @classmethod
    def connect(cls, table_name: str, *, client: DynamoDBClient | None = None) -> DynamoBeamStore:
        """The store on `table_name`, creating the table (with its index and TTL) if it is missing."""
        client = client or boto3.client("dynamodb")
        ensure_table(client, table_name)
        return cls(client, table_name)

    # reads

    def _get(self, key: Item) -> Item | None:
        response = self.client.get_item(TableName=self.table_name, Key=key, ConsistentRead=True)
        return response.get("Item")

    def get_session(self, session_id: str) -> Session | None:
        return _load(Session, self._get(_session_key(session_id)))

    def get_interaction(self, interaction_id: str) -> Interaction | None:
        return _load(Interaction, self._get(_interaction_key(interaction_id)))

    def get_run(self, run_id: str) -> Run | None:
        return _load(Run, self._get(_run_key(run_id)))

    def get_action(self, action_id: str) -> Action | None:
        return _load(Action, self._get(_action_key(action_id)))

    def _query(self, limit: int | None = None, **params: Any) -> Iterator[Item]:
        params["TableName"] = self.table_name
        returned = 0
        while True:
            if limit is not None:
                params["Limit"] = limit - returned
            page = self.client.query(**params)
            for item in page.get("Items", []):
                returned += 1
                yield item
            if "LastEvaluatedKey" not in page or (limit is not None and returned >= limit):
                return
            params["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def list_messages(
        self, session_id: str, *, after_seq: int = 0, limit: int | None = None
    ) -> list[Message]:
        if (limit is not None and limit <= 0) or after_seq >= _MAX_SEQ:
            return []
        items = self._query(
            limit,
            KeyConditionExpression="pk = :pk AND sk BETWEEN :lo AND :hi",
            ExpressionAttributeValues={
                ":pk": {"S": f"SESSION#{session_id}"},
                ":lo": {"S": _message_sk(after_seq + 1)},
                ":hi": {"S": _message_sk(_MAX_SEQ)},
            },
            ConsistentRead=True,
        )
        return [Message.model_validate(deserialize_item(i)) for i in items]

    def get_session_with_messages(self, session_id: str) -> tuple[Session | None, list[Message]]:
        session: Session | None = None
        messages: list[Message] = []
        items = self._query(
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": {"S": f"SESSION#{session_id}"}},
            ConsistentRead=True,
        )
        for item in items:
            if item["sk"]["S"] == "SESSION":
                session = Session.model_validate(deserialize_item(item))
            else:
                messages.append(Message.model_validate(deserialize_item(item)))
        return session, messages

    def _query_interaction(self, interaction_id: str, prefix: str) -> Iterator[Item]:
        return self._query(
            IndexName=GSI1,
            KeyConditionExpression="gsi1pk = :pk AND begins_with(gsi1sk, :prefix)",
            ExpressionAttributeValues={
                ":pk": {"S": f"INTERACTION#{interaction_id}"},
                ":prefix": {"S": prefix},
            },
        )

    def list_runs(self, interaction_id: str) -> list[Run]:
        return [
            Run.model_validate(deserialize_item(i)) for i in self._query_interaction(interaction_id, "RUN#")
        ]

    def list_actions(self, interaction_id: str) -> list[Action]:
        items = self._query_interaction(interaction_id, "ACTION#")
        return [Action.model_validate(deserialize_item(i)) for i in items]

    def claim_run(self, run_id: str, claimed_by: str, lease_expires_at: str, now: str) -> Run:
        e = _Expr()
        try:
            response = self.client.update_item(
                TableName=self.table_name,
                Key=_run_key(run_id),
                **e.apply(
                    {
                        "UpdateExpression": e.sets(
                            {
                                "claimed_by": serialize(claimed_by),
                                "lease_expires_at": serialize(lease_expires_at),
                                "updated_at": serialize(now),
                            }
                        ),
                        "ConditionExpression": e.eq("status", serialize("running"))
                        + f" AND attribute_not_exists({e.name('claimed_by')})",
                    }
                ),
                ReturnValues="ALL_NEW",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as error:
            if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            current = _load(Run, cast(Item | None, error.response.get("Item")))
            if current is None or current.status != "running":
                raise RunNotRunning("the run is not running") from None
            raise RunClaimed(current) from None
        claimed = _load(Run, response["Attributes"])
        assert claimed is not None
        return claimed

    # frames

    def append_frames(self, run_id: str, frames: Sequence[Mapping[str, Any]], expires_at: int) -> None:
        requests = [{"PutRequest": {"Item": _frame_item(run_id, f, expires_at)}} for f in frames]
        for start in range(0, len(requests), 25):
            pending: Any = {self.table_name: requests[start : start + 25]}
            for attempt in range(MAX_BATCH_ATTEMPTS):
                left = self.client.batch_write_item(RequestItems=pending).get("UnprocessedItems") or {}
                if not left:
                    break
                pending = left
                time.sleep(random.uniform(0, min(1.0, 0.05 * 2**attempt)))
            else:
                raise StoreBusy(f"frames of run {run_id} were left unprocessed {MAX_BATCH_ATTEMPTS} times")

    def list_frames(
        self, run_id: str, *, after_seq: int = -1, limit: int | None = None
    ) -> list[dict[str, Any]]:
        if (limit is not None and limit <= 0) or after_seq >= _MAX_FRAME:
            return []
        now = int(time.time())
        items = self._query(
            KeyConditionExpression="pk = :pk AND sk BETWEEN :lo AND :hi",
            ExpressionAttributeValues={
                ":pk": {"S": f"RUN#{run_id}"},
                ":lo": {"S": _frame_sk(after_seq + 1)},
                ":hi": {"S": _frame_sk(_MAX_FRAME)},
            },
            ConsistentRead=True,
        )
        # TTL deletes lazily: an expired frame may still be read, and is skipped
        found = [json.loads(i["frame"]["S"]) for i in items if int(i[TTL_ATTRIBUTE]["N"]) > now]
        return found if limit is None else found[:limit]

    # sessions reserved by a subscriber, and the WebSocket connections of a session

    def reserve_session(self, session: Session) -> Session:
        try:
            self.client.put_item(
                TableName=self.table_name,
                Item=_session_key(session.session_id) | _record_attrs(session) | {"entity": {"S": "session"}},
                ConditionExpression="attribute_not_exists(pk)",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as error:
            if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            existing = _load(Session, cast(Item | None, error.response.get("Item")))
            if existing is None:  # a server that does not return the old item
                existing = self.get_session(session.session_id)
            assert existing is not None
            return existing
        return session

    def put_connection(self, connection: Connection) -> None:
        self.client.put_item(
            TableName=self.table_name,
            Item=_connection_key(connection.connection_id)
            | _record_attrs(connection)
            | {
                "entity": {"S": "connection"},
                "gsi1pk": {"S": f"SESSION#{connection.session_id}"},
                "gsi1sk": {"S": f"CONN#{connection.connection_id}"},
                TTL_ATTRIBUTE: {"N": str(connection.expires_at)},
            },
        )

    def get_connection(self, connection_id: str) -> Connection | None:
        return _load(Connection, self._get(_connection_key(connection_id)))

    def delete_connection(self, connection_id: str) -> None:
        self.client.delete_item(TableName=self.table_name, Key=_connection_key(connection_id))

    def list_connections(self, session_id: str) -> list[Connection]:
        items = self._query(
            IndexName=GSI1,
            KeyConditionExpression="gsi1pk = :pk AND begins_with(gsi1sk, :prefix)",
            ExpressionAttributeValues={":pk": {"S": f"SESSION#{session_id}"}, ":prefix": {"S": "CONN#"}},
        )
        now = int(time.time())
        # TTL deletes lazily: an expired connection may still be read, and is skipped
        found = [Connection.model_validate(deserialize_item(i)) for i in items]
        return [c for c in found if c.expires_at > now]

    # the step

    def commit(self, step: StepWrite) -> list[Message]:
        session_exists = step.session_op == "update"
        expected_seq = step.session.last_seq
        started = time.monotonic()
        for attempt in range(self.max_attempts):
            items, tags = self._transaction(step, session_exists, expected_seq)
            try:
                self.client.transact_write_items(
                    TransactItems=cast(Any, items), ClientRequestToken=str(uuid.uuid4())
                )
            except ClientError as error:
                if error.response["Error"]["Code"] != "TransactionCanceledException":
                    raise
                reasons = error.response.get("CancellationReasons", [])
                try:
                    current_session = self._raise_conflict(step, tags, reasons)
                except _Retry:
                    current_session = None
                if current_session is not None:
                    session_exists, expected_seq = True, current_session.last_seq
                if time.monotonic() - started > self.max_seconds:
                    break
                # jitter spreads writers that lost to the same winner
                time.sleep(random.uniform(0, min(BACKOFF_CAP_SECONDS, 0.002 * 2 ** min(attempt, 8))))
                continue
            return _messages_from(step, expected_seq if session_exists else 0)
        raise StoreBusy(
            f"the step was refused for contention {self.max_attempts} times or for {self.max_seconds}s"
        )

    def _raise_conflict(
        self, step: StepWrite, tags: list[Tag], reasons: Sequence[Mapping[str, Any]]
    ) -> Session | None:
        """Raise the conflict the reasons show, in priority order; else return the session to retry with."""
        failed: dict[Tag, Item | None] = {}
        for tag, reason in zip(tags, reasons, strict=False):
            code = reason.get("Code", "None")
            if code == "ConditionalCheckFailed":
                failed[tag] = reason.get("Item")
            elif code in ("TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded"):
                continue
            elif code not in ("None", None):
                raise StoreConflict(f"{tag[0]} write refused: {code} {reason.get('Message', '')}".strip())

        for tag, old in failed.items():
            if tag[0] in ("resolve", "outcome", "open"):
                raise ActionConflict(tag[1], _load(Action, old))
        session: Session | None = None
        if ("session", step.session.session_id) in failed:
            session = _load(Session, failed["session", step.session.session_id])
            if session is None:
                raise SessionMissing("the session does not exist")
            if session.user_id != step.session.user_id:
                raise SessionOwnedByOther(session.user_id)
        if ("interaction", step.interaction.interaction_id) in failed:
            raise _interaction_conflict(
                step, _load(Interaction, failed["interaction", step.interaction.interaction_id])
            )
        if ("run", step.run.run_id) in failed:
            raise (
                RecordExists("the run already exists")
                if step.run_op == "create"
                else RunNotRunning("the run is not running")
            )
        if session is not None:
            return session  # the counter moved: messages put at stale seqs collide too, so all is retried
        if any(tag[0] == "message" for tag in failed):
            raise RecordExists("a message of the step already exists")
        raise _Retry()

    def _transaction(
        self, step: StepWrite, session_exists: bool, expected_seq: int
    ) -> tuple[list[dict[str, Any]], list[Tag]]:
        items: list[dict[str, Any]] = []
        tags: list[Tag] = []
        table = self.table_name
        now = step.run.updated_at
        run_id = step.run.run_id

        def add(tag: Tag, kind: str, op: dict[str, Any]) -> None:
            op["TableName"] = table
            op["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
            items.append({kind: op})
            tags.append(tag)

        for action in step.resolve_actions:
            e = _Expr()
            update = {
                "status": serialize(action.status),
                "response": serialize_json(
                    action.response.model_dump(mode="json", exclude_none=True) if action.response else None
                ),
                "resolved_run_id": serialize(action.resolved_run_id),
                "updated_at": serialize(now),
                "gsi1sk": serialize(_action_gsi1sk(action)),
            }
            add(
                ("resolve", action.action_id),
                "Update",
                e.apply(
                    {
                        "Key": _action_key(action.action_id),
                        "UpdateExpression": e.sets(update),
                        "ConditionExpression": "attribute_exists(pk) AND "
                        + " AND ".join(
                            [
                                e.eq("status", serialize("pending")),
                                e.eq("interaction_id", serialize(action.interaction_id)),
                                e.eq("session_id", serialize(action.session_id)),
                            ]
                        ),
                    }
                ),
            )
        for action in step.record_outcomes:
            e = _Expr()
            outcome = action.outcome.model_dump(mode="json", exclude_none=True) if action.outcome else None
            add(
                ("outcome", action.action_id),
                "Update",
                e.apply(
                    {
                        "Key": _action_key(action.action_id),
                        "UpdateExpression": e.sets(
                            {"outcome": serialize_json(outcome), "updated_at": serialize(now)}
                        ),
                        "ConditionExpression": " AND ".join(
                            [
                                e.eq("status", serialize("resolved")),
                                e.eq("resolved_run_id", serialize(run_id)),
                                f"attribute_not_exists({e.name('outcome')})",
                            ]
                        ),
                    }
                ),
            )
        for action in step.open_actions:
            e = _Expr()
            attrs = _record_attrs(action) | _action_index(action)
            add(
                ("open", action.action_id),
                "Update",
                e.apply(
                    {
                        "Key": _action_key(action.action_id),
                        "UpdateExpression": e.sets(attrs, keep_existing=True),
                        "ConditionExpression": "attribute_not_exists(pk) OR ("
                        + e.eq("status", serialize("pending"))
                        + " AND "
                        + e.eq("interaction_id", serialize(action.interaction_id))
                        + ")",
                    }
                ),
            )

        session_tag: Tag = ("session", step.session.session_id)
        count = len(step.messages)
        if not session_exists:
            session = step.session.model_copy(update={"last_seq": count, "updated_at": now})
            if step.touch_last_active:
                session = session.model_copy(update={"last_active_at": now})
            add(
                session_tag,
                "Put",
                {
                    "Item": _session_key(session.session_id)
                    | _record_attrs(session)
                    | {"entity": {"S": "session"}},
                    "ConditionExpression": "attribute_not_exists(pk)",
                },
            )
        else:
            e = _Expr()
            changes = {"updated_at": serialize(now)}
            if step.touch_last_active:
                changes["last_active_at"] = serialize(now)
            conditions = ["attribute_exists(pk)", e.eq("user_id", serialize(step.session.user_id))]
            if count:
                changes["last_seq"] = serialize(expected_seq + count)
                conditions.append(e.eq("last_seq", serialize(expected_seq)))
            add(
                session_tag,
                "Update",
                e.apply(
                    {
                        "Key": _session_key(step.session.session_id),
                        "UpdateExpression": e.sets(changes),
                        "ConditionExpression": " AND ".join(conditions),
                    }
                ),
            )

        interaction = step.interaction
        interaction_tag: Tag = ("interaction", interaction.interaction_id)
        e = _Expr()
        if step.interaction_op == "create":
            created = interaction.model_copy(update={"status": "in_progress", "active_run_id": run_id})
            add(
                interaction_tag,
                "Put",
                {
                    "Item": _interaction_key(interaction.interaction_id)
                    | _record_attrs(created)
                    | {"entity": {"S": "interaction"}},
                    "ConditionExpression": "attribute_not_exists(pk)",
                },
            )
        elif step.interaction_op == "acquire":
            add(
                interaction_tag,
                "Update",
                e.apply(
                    {
                        "Key": _interaction_key(interaction.interaction_id),
                        "UpdateExpression": e.sets(
                            {
                                "status": serialize("in_progress"),
                                "active_run_id": serialize(run_id),
                                "updated_at": serialize(now),
                            }
                        ),
                        "ConditionExpression": "attribute_exists(pk) AND "
                        + e.eq("session_id", serialize(interaction.session_id))
                        + f" AND attribute_not_exists({e.name('active_run_id')})",
                    }
                ),
            )
        else:
            release = e.sets({"status": serialize(interaction.status), "updated_at": serialize(now)})
            add(
                interaction_tag,
                "Update",
                e.apply(
                    {
                        "Key": _interaction_key(interaction.interaction_id),
                        "UpdateExpression": f"{release} REMOVE {e.name('active_run_id')}",
                        "ConditionExpression": e.eq("active_run_id", serialize(run_id)),
                    }
                ),
            )

        e = _Expr()
        run_item = (
            _run_key(run_id) | _record_attrs(step.run) | _run_index(step.run) | {"entity": {"S": "run"}}
        )
        if step.run_op == "create":
            add(("run", run_id), "Put", {"Item": run_item, "ConditionExpression": "attribute_not_exists(pk)"})
        else:
            add(
                ("run", run_id),
                "Put",
                e.apply({"Item": run_item, "ConditionExpression": e.eq("status", serialize("running"))}),
            )

        for message in _messages_from(step, expected_seq if session_exists else 0):
            item = {"pk": {"S": f"SESSION#{message.session_id}"}, "sk": {"S": _message_sk(message.seq)}}
            add(
                ("message", message.message_id),
                "Put",
                {
                    "Item": item | _record_attrs(message) | {"entity": {"S": "message"}},
                    "ConditionExpression": "attribute_not_exists(pk)",
                },
            )
        for frame in step.frames:
            items.append(
                {"Put": {"TableName": table, "Item": _frame_item(run_id, frame, step.frames_expire_at)}}
            )
            tags.append(("frame", str(frame["frame_seq"])))
        return items, tags


def _action_index(action: Action) -> dict[str, Any]:
    return {
        "gsi1pk": serialize(f"INTERACTION#{action.interaction_id}"),
        "gsi1sk": serialize(_action_gsi1sk(action)),
        "entity": serialize("action"),
    }


def _run_index(run: Run) -> dict[str, Any]:
    return {
        "gsi1pk": serialize(f"INTERACTION#{run.interaction_id}"),
        "gsi1sk": serialize(f"RUN#{run.created_at}#{run.run_id}"),
    }


def _interaction_conflict(step: StepWrite, current: Interaction | None) -> StoreConflict:
    if step.interaction_op == "create":
        return RecordExists("the interaction already exists")
    if current is None:
        return InteractionMissing("the interaction does not exist")
    if step.interaction_op == "acquire":
        if current.session_id != step.interaction.session_id:
            return InteractionInOtherSession(current.session_id)
        return InteractionBusy(current.active_run_id or "")
    return RunNotRunning("the interaction is no longer held by this run")


def _messages_from(step: StepWrite, after_seq: int) -> list[Message]:
    return [_message(step.session.session_id, d, after_seq + i) for i, d in enumerate(step.messages, start=1)]


def _message(session_id: str, draft: MessageDraft, seq: int) -> Message:
    return Message(
        message_id=draft.message_id,
        session_id=session_id,
        interaction_id=draft.interaction_id,
        run_id=draft.run_id,
        seq=seq,
        role=draft.role,
        type=draft.type,
        content=list(draft.content),
        created_at=draft.created_at,
        updated_at=draft.created_at,
    )


def ensure_table(client: DynamoDBClient, table_name: str) -> None:
    """Create the table with its index and TTL unless it exists; wait until it is active."""
    try:
        client.describe_table(TableName=table_name)
        return
    except ClientError as error:
        if error.response["Error"]["Code"] != "ResourceNotFoundException":
            raise
    try:
        client.create_table(TableName=table_name, **TABLE_DEFINITION)
    except ClientError as error:
        if error.response["Error"]["Code"] != "ResourceInUseException":
            raise
    client.get_waiter("table_exists").wait(TableName=table_name, WaiterConfig={"Delay": 1, "MaxAttempts": 60})
    try:
        client.update_time_to_live(
            TableName=table_name, TimeToLiveSpecification={"Enabled": True, "AttributeName": TTL_ATTRIBUTE}
        )
    except ClientError as error:
        # another process that created the table at the same moment enabled it first
        if error.response["Error"]["Code"] != "ValidationException":
            raise

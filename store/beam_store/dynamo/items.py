"""DynamoBeamStore's items: their keys, and records to and from attribute values.

Items (pk / sk):
  SESSION#<id> / SESSION           the session, with the message counter `last_seq` and, for each
                                   interaction in progress, `open#<interaction id>`: the seq its
                                   messages start from (top-level attributes: a step sets or removes
                                   its own with no read, whatever the others)
  SESSION#<id> / MSG#<seq:012d>    its messages, so one Query reads a session and its history
  INTERACTION#<id> / INTERACTION   the interaction, with `active_run_id` while a run holds it and
                                   `waiting_on`: the actions its last run left pending (read by the
                                   sweep from the table, where gsi1 may not show them yet)
  RUN#<id> / RUN                   a run;    gsi1: INTERACTION#<id> / RUN#<created_at>#<id>
  RUN#<id> / FRAME#<frame_seq:08d> a frame of a streamed run, JSON, with a TTL
  ACTION#<id> / ACTION             an action; gsi1: INTERACTION#<id> /
                                   ACTION#<0 pending|1 done>#<created_at>#<id>;
                                   gsi2: SESSION#<id> / ACTION#<status>#<created_at>#<id> (the inbox);
                                   gsi3, while pending: PENDING / <expires_at>#<id> (the sweep)
                                   gsi4, while pending and its owner may answer it:
                                   INBOX#user:<owner> / <created_at>#<id> (the approvers' inbox)
  ACTION#<id> / INBOX#<principal>  a copy of a pending action for another approver (a user or a group);
                                   gsi4: INBOX#<principal> / <created_at>#<id> (inbox_items.py)
  CONN#<id> / CONN                 a WebSocket connection, with a TTL; gsi1: SESSION#<id> / CONN#<id>
  REQUEST#<request_id>#<user_id> / REQUEST
                                   an idempotency record (a caller's request_id), with a TTL

The attributes that hold JSON of any shape (a message's `content`, an action's `args`, `outcome` and
`response`, a run's `error`, an idempotency record's `answer`) are stored as one string of compact JSON,
not as DynamoDB maps and lists: a DynamoDB number has no int/float distinction (1e20 came back as an
int), holds 38 digits within 1e-130..1e126 (an output of 1e300 or 10**40 could not be written), and maps
nest 32 deep at most. Items written before, with those attributes as maps and lists, are still read
(their numbers as before).

One of them too large for the item (over 256 KiB as stored, or the largest while the item is too large) is
kept in S3 and the item holds a pointer in its place, {"s3": {"bucket", "key", "size", "sha256"}}:
content.py puts it there before the write and back before the item is read here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from decimal import Decimal
from typing import Any, TypeVar

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from pydantic import BaseModel

from ..approvers import approval_cursor, owner_approves, user_principal
from ..records import (
    Action,
    Connection,
    Grant,
    Interaction,
    Message,
    RequestRecord,
    Run,
    Session,
    action_cursor,
    overdue_cursor,
)

M = TypeVar("M", bound=BaseModel)
Item = dict[str, Any]

GSI1 = "gsi1"
GSI2 = "gsi2"
# a sparse index: pending actions only (an action leaves it when resolved or expired), soonest to expire
# first, all under one key, so the sweep finds the overdue ones of every session in one Query per page.
# One partition: its writes (an action asked for, answered) are bounded by people's decisions, far below
# what a partition takes.
GSI3 = "gsi3"
PENDING_KEY = "PENDING"
# the approvers' inbox (CONTRACT 11): INBOX#<principal> / <created_at>#<action id>, newest first, for
# pending actions only: on the action item for the session's owner, on an entry item for each other
# approver (inbox_items.py)
GSI4 = "gsi4"
TTL_ATTRIBUTE = "expires_at"
OPEN_PREFIX = "open#"
# a standing grant on the session item: `grant#<grant id>`, its JSON (set or removed with no read)
GRANT_PREFIX = "grant#"
WAITING_ATTRIBUTE = "waiting_on"
MAX_SEQ = 10**12 - 1
MAX_FRAME = 10**8 - 1
# record fields whose values are JSON of any shape, each stored as a string of compact JSON
JSON_ATTRIBUTES = frozenset(
    {
        "content",
        "args",
        "run_args",
        "outcome",
        "response",
        "error",
        "usage",
        "answer",
        "votes",
        "approvals",
        "state",
    }
)

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


def record_attrs(record: BaseModel) -> dict[str, Any]:
    """A record's fields as attribute values (None fields left out)."""
    return {k: serialize_attr(k, v) for k, v in record.model_dump(mode="json", exclude_none=True).items()}


def load(model: type[M], item: Item | None) -> M | None:
    if not item:
        return None
    attrs = deserialize_item(item)
    if model is Session:
        attrs["open_interactions"] = {
            name[len(OPEN_PREFIX) :]: value for name, value in attrs.items() if name.startswith(OPEN_PREFIX)
        }
        attrs["grants"] = {
            name[len(GRANT_PREFIX) :]: json.loads(value)
            for name, value in attrs.items()
            if name.startswith(GRANT_PREFIX)
        }
    return model.model_validate(attrs)


# keys


def session_key(session_id: str) -> Item:
    return {"pk": {"S": f"SESSION#{session_id}"}, "sk": {"S": "SESSION"}}


def interaction_key(interaction_id: str) -> Item:
    return {"pk": {"S": f"INTERACTION#{interaction_id}"}, "sk": {"S": "INTERACTION"}}


def state_key(interaction_id: str) -> Item:
    """The interaction's state (StepWrite.state), beside its item: read only by the runs that keep one."""
    return {"pk": {"S": f"INTERACTION#{interaction_id}"}, "sk": {"S": "STATE"}}


def run_key(run_id: str) -> Item:
    return {"pk": {"S": f"RUN#{run_id}"}, "sk": {"S": "RUN"}}


def action_key(action_id: str) -> Item:
    return {"pk": {"S": f"ACTION#{action_id}"}, "sk": {"S": "ACTION"}}


def connection_key(connection_id: str) -> Item:
    return {"pk": {"S": f"CONN#{connection_id}"}, "sk": {"S": "CONN"}}


def request_key(user_id: str, request_id: str) -> Item:
    """A request_id is a UUID (36 characters, no `#`), so the user id after it is read back unambiguously;
    a user id is at most 1 KiB, the key under DynamoDB's 2 KiB."""
    return {"pk": {"S": f"REQUEST#{request_id}#{user_id}"}, "sk": {"S": "REQUEST"}}


def message_sk(seq: int) -> str:
    return f"MSG#{seq:012d}"


def frame_sk(frame_seq: int) -> str:
    return f"FRAME#{frame_seq:08d}"


def action_gsi1sk(action: Action) -> str:
    return f"ACTION#{0 if action.status == 'pending' else 1}#{action.created_at}#{action.action_id}"


def action_gsi2sk(action: Action) -> str:
    return f"ACTION#{action_cursor(action)}"


# whole items


def open_attribute(interaction_id: str) -> str:
    """The session item's attribute that holds an interaction in progress (the seq it starts from)."""
    return OPEN_PREFIX + interaction_id


def session_item(session: Session) -> Item:
    opened = {open_attribute(i): serialize(seq) for i, seq in session.open_interactions.items()}
    granted = {grant_attribute(g): grant_value(g) for g in session.grants.values()}
    attrs = {k: v for k, v in record_attrs(session).items() if k not in ("open_interactions", "grants")}
    return session_key(session.session_id) | attrs | opened | granted | {"entity": {"S": "session"}}


def grant_attribute(grant: Grant) -> str:
    return GRANT_PREFIX + grant.grant_id


def grant_value(grant: Grant) -> Any:
    return serialize_json(grant.model_dump(mode="json", exclude_none=True))


def interaction_item(interaction: Interaction) -> Item:
    key = interaction_key(interaction.interaction_id)
    return key | record_attrs(interaction) | {"entity": {"S": "interaction"}}


def message_item(message: Message) -> Item:
    key = {"pk": {"S": f"SESSION#{message.session_id}"}, "sk": {"S": message_sk(message.seq)}}
    return key | record_attrs(message) | {"entity": {"S": "message"}}


def run_item(run: Run) -> Item:
    index = {
        "gsi1pk": serialize(f"INTERACTION#{run.interaction_id}"),
        "gsi1sk": serialize(f"RUN#{run.created_at}#{run.run_id}"),
    }
    return run_key(run.run_id) | record_attrs(run) | index | {"entity": {"S": "run"}}


# the attributes of an action's entries in gsi3 and gsi4, removed when it stops being pending
PENDING_INDEX_ATTRIBUTES = ("gsi3pk", "gsi3sk", "gsi4pk", "gsi4sk")


def inbox_index(action: Action, principal: str) -> Item:
    """An entry of `principal`'s inbox (gsi4) for a pending action."""
    return {"gsi4pk": serialize(f"INBOX#{principal}"), "gsi4sk": serialize(approval_cursor(action))}


def pending_index(action: Action) -> Item:
    """The action's entries in gsi3 (a pending action that expires) and in its owner's inbox (gsi4, where
    the owner may answer it)."""
    if action.status != "pending":
        return {}
    owner = inbox_index(action, user_principal(action.user_id)) if owner_approves(action) else {}
    if action.expires_at is None:
        return owner
    return {"gsi3pk": serialize(PENDING_KEY), "gsi3sk": serialize(overdue_cursor(action))} | owner


def action_attrs(action: Action) -> Item:
    """An action's attributes with its index entries (not its key: an action is written by an update)."""
    return (
        record_attrs(action)
        | {
            "gsi1pk": serialize(f"INTERACTION#{action.interaction_id}"),
            "gsi1sk": serialize(action_gsi1sk(action)),
            "gsi2pk": serialize(f"SESSION#{action.session_id}"),
            "gsi2sk": serialize(action_gsi2sk(action)),
            "entity": serialize("action"),
        }
        | pending_index(action)
    )


def frame_item(run_id: str, frame: Mapping[str, Any], expires_at: int) -> Item:
    return {
        "pk": {"S": f"RUN#{run_id}"},
        "sk": {"S": frame_sk(int(frame["frame_seq"]))},
        "entity": {"S": "frame"},
        "frame": {"S": json.dumps(frame)},
        TTL_ATTRIBUTE: {"N": str(expires_at)},
    }


def request_item(record: RequestRecord) -> Item:
    """Its `expires_at` (epoch s) is the table's TTL attribute: DynamoDB deletes it some time after."""
    key = request_key(record.user_id, record.request_id)
    return key | record_attrs(record) | {"entity": {"S": "request"}}


def connection_item(connection: Connection) -> Item:
    return (
        connection_key(connection.connection_id)
        | record_attrs(connection)
        | {
            "entity": {"S": "connection"},
            "gsi1pk": {"S": f"SESSION#{connection.session_id}"},
            "gsi1sk": {"S": f"CONN#{connection.connection_id}"},
            TTL_ATTRIBUTE: {"N": str(connection.expires_at)},
        }
    )

"""Content too large for a DynamoDB item, kept in S3 (the content bucket) and read back transparently.

A write's JSON attributes (a message's `content`, an action's `args`, `outcome`..., a frame, an idempotency
record's `answer`: OFFLOADABLE) stay in the item while small. Before the write is sent:

  1. each one over OFFLOAD_BYTES (256 KiB as stored) is put in S3;
  2. then, while an item is over ITEM_BUDGET (an action holds several JSON attributes), its largest;
  3. then, while a transaction's items add up to over TRANSACTION_BUDGET, the largest of all.

The item keeps a pointer in the attribute's place, a map {"s3": {"bucket", "key", "size", "sha256"}}; every
read puts the object's text back before the item is parsed. The object is written BEFORE the item, so a
stored item never points at a missing object; a write that then fails leaves an object nothing points at,
which is harmless. Keys are content-addressed, `<kind>/<sha256 of the bytes>` (kind: messages, actions,
frames, requests, by the record's item): a write sent again puts the same object, an object never changes,
and a process may keep what it read or wrote (ContentCache). The bucket's lifecycle rule expires `frames/`
and `requests/` objects after their items' TTL; messages and actions never expire, nor do their objects.

Without a bucket nothing goes to S3: an item over DynamoDB's limit, or a transaction over its own, is
refused before it is sent (ContentTooLarge, naming the size and the limit), never a raw ClientError.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections import OrderedDict
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..step_write import StepWrite
from ..store_errors import ContentTooLarge
from .items import JSON_ATTRIBUTES, Item, action_attrs, action_key

if TYPE_CHECKING:
    from mypy_boto3_s3.client import S3Client
else:
    S3Client = Any

# the attributes that may be kept in S3: JSON of any size (items.py stores each as one string)
OFFLOADABLE = JSON_ATTRIBUTES | {"frame"}
OFFLOAD_BYTES = 256 * 1024
# DynamoDB's limits: an item, and the items of one TransactWriteItems added up
ITEM_LIMIT = 400 * 1024
TRANSACTION_LIMIT = 4_000_000
# kept under them with room for what a write does not show (an update's attributes stored before)
ITEM_BUDGET = 380 * 1024
TRANSACTION_BUDGET = 3_500_000
# what a process keeps of the objects it read or wrote (content-addressed: never stale)
CACHE_BYTES = 32 * 1024 * 1024
POINTER = "s3"
_POINTER_FIELDS = {"bucket": "S", "key": "S", "size": "N", "sha256": "S"}
# a pointer's size in an item, at most: the name, four fields, a bucket name of 63 characters, a key
POINTER_BYTES = 256
# `#n3 = :v4` and `#n3 = if_not_exists(#n3, :v4)` in an update's SET (expressions.Expression writes them)
_SET_CLAUSE = re.compile(r"(#\w+) = (?:if_not_exists\(\1, )?(:\w+)")
_KINDS = {
    "SESSION#": "messages",
    "ACTION#": "actions",
    "REQUEST#": "requests",
    "RUN#": "frames",
    "INTERACTION#": "states",
}


# sizes, as DynamoDB counts them (numbers counted as their digits: an upper bound)


def value_size(value: Mapping[str, Any]) -> int:
    ((kind, inner),) = value.items()
    if kind in ("S", "N"):
        return len(str(inner).encode())
    if kind == "B":
        return len(inner)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "M":
        return 3 + sum(len(k.encode()) + value_size(v) + 1 for k, v in inner.items())
    if kind == "L":
        return 3 + sum(value_size(v) + 1 for v in inner)
    return sum(len(str(v).encode()) for v in inner)  # SS, NS, BS


def item_size(item: Mapping[str, Any]) -> int:
    return sum(len(name.encode()) + value_size(value) for name, value in item.items())


# pointers


def pointer(bucket: str, key: str, size: int, sha256: str) -> dict[str, Any]:
    fields = {"bucket": {"S": bucket}, "key": {"S": key}, "size": {"N": str(size)}, "sha256": {"S": sha256}}
    return {"M": {POINTER: {"M": fields}}}


def pointed(value: Mapping[str, Any]) -> dict[str, str] | None:
    """The pointer's fields (bucket, key, size, sha256) where `value` is exactly a pointer, else None."""
    outer = value.get("M")
    if not isinstance(outer, dict) or set(outer) != {POINTER}:
        return None
    fields = outer[POINTER].get("M") if isinstance(outer[POINTER], dict) else None
    if not isinstance(fields, dict) or set(fields) != set(_POINTER_FIELDS):
        return None
    if any(set(fields[name]) != {kind} for name, kind in _POINTER_FIELDS.items()):
        return None
    return {name: str(fields[name][kind]) for name, kind in _POINTER_FIELDS.items()}


def kind_of(key: Mapping[str, Any]) -> str:
    """Which record an item is, for its objects' key prefix (the bucket's lifecycle rules go by it)."""
    pk = str(key.get("pk", {}).get("S", ""))
    for prefix, kind in _KINDS.items():
        if pk.startswith(prefix):
            if kind == "frames" and not str(key.get("sk", {}).get("S", "")).startswith("FRAME#"):
                return "runs"
            return kind
    return "records"


def describe(kind: str) -> str:
    return {
        "messages": "a message",
        "actions": "an action",
        "frames": "a frame",
        "requests": "a request's kept answer",
        "runs": "a run",
        "states": "an interaction's state",
    }.get(kind, "a record")


# what a write holds


class Slot:
    """Where one offloadable attribute value sits in a write: `container[name]`."""

    def __init__(self, container: dict[str, Any], name: str) -> None:
        self.container, self.name = container, name
        self.size = value_size(container[name])


class Write:
    """One item a request writes: its kind, the offloadable values it sets, its size once written."""

    def __init__(self, kind: str, slots: list[Slot], size: int) -> None:
        self.kind, self.slots, self.size = kind, slots, size
        self.chosen: list[Slot] = []

    def take(self, slot: Slot) -> None:
        self.slots.remove(slot)
        self.chosen.append(slot)
        self.size -= slot.size - POINTER_BYTES

    def largest(self) -> Slot:
        return max(self.slots, key=lambda s: s.size)


def _json_slots(container: dict[str, Any], names: Mapping[str, str]) -> list[Slot]:
    """The slots of `container` (by placeholder or attribute name) that hold an offloadable JSON string."""
    return [
        Slot(container, name)
        for name, attr in names.items()
        if attr in OFFLOADABLE and isinstance(container.get(name), dict) and "S" in container[name]
    ]


def put_write(item: dict[str, Any]) -> Write:
    return Write(kind_of(item), _json_slots(item, {name: name for name in item}), item_size(item))


def update_write(op: dict[str, Any], projected: int | None = None) -> Write:
    """An update's SET values; its size is `projected` (the whole item once written) where the caller
    knows it, else that of what it sets."""
    names, values = op.get("ExpressionAttributeNames", {}), op.get("ExpressionAttributeValues", {})
    sets = {v: names.get(n, n) for n, v in _SET_CLAUSE.findall(op.get("UpdateExpression", ""))}
    slots = _json_slots(values, sets)
    size = sum(len(attr.encode()) + value_size(values[v]) for v, attr in sets.items() if v in values)
    return Write(kind_of(op.get("Key", {})), slots, max(size, projected or 0))


def transaction_writes(items: list[dict[str, Any]], projected: Mapping[str, int]) -> list[Write]:
    """The writes of a TransactWriteItems' items; `projected`: the size of an updated item once written,
    by its pk, where the caller knows it (an action's whole record)."""
    writes = []
    for entry in items:
        if "Put" in entry:
            writes.append(put_write(entry["Put"]["Item"]))
        elif "Update" in entry:
            op = entry["Update"]
            writes.append(update_write(op, projected.get(str(op["Key"]["pk"]["S"]))))
    return writes


def projected_sizes(step: StepWrite) -> dict[str, int]:
    """The size each action the step updates has once written, by its pk: an update shows only what it
    sets, and an action's JSON attributes (args, response, outcome...) are set by different steps."""
    actions = [*step.open_actions, *step.resolve_actions, *step.record_outcomes, *step.tell_expired]
    return {action_key(a.action_id)["pk"]["S"]: item_size(action_attrs(a)) for a in actions}


def plan(writes: list[Write], *, transaction: bool) -> None:
    """Choose the values that go to S3 (each write's `chosen`), in the module's order."""
    for write in writes:
        for slot in [s for s in write.slots if s.size > OFFLOAD_BYTES]:
            write.take(slot)
        while write.size > ITEM_BUDGET and write.slots:
            write.take(write.largest())
    while transaction and sum(w.size for w in writes) > TRANSACTION_BUDGET:
        holders = [w for w in writes if w.slots]
        if not holders:
            break
        holder = max(holders, key=lambda w: w.largest().size)
        holder.take(holder.largest())


def check(writes: list[Write], *, transaction: bool, budget: bool) -> None:
    """Refuse what DynamoDB would (ContentTooLarge); `budget`: against the module's budgets instead."""
    item_limit, transaction_limit = (
        (ITEM_BUDGET, TRANSACTION_BUDGET) if budget else (ITEM_LIMIT, TRANSACTION_LIMIT)
    )
    for write in writes:
        if write.size > item_limit:
            raise ContentTooLarge(describe(write.kind), write.size, item_limit)
    total = sum(w.size for w in writes)
    if transaction and total > transaction_limit:
        raise ContentTooLarge("the step's writes", total, transaction_limit)


class ContentCache:
    """The objects a process read or wrote, by key, least recently used dropped past CACHE_BYTES."""

    def __init__(self, limit: int = CACHE_BYTES) -> None:
        self._texts: OrderedDict[str, str] = OrderedDict()
        self._bytes, self._limit = 0, limit

    def get(self, key: str) -> str | None:
        text = self._texts.get(key)
        if text is not None:
            self._texts.move_to_end(key)
        return text

    def keep(self, key: str, text: str) -> None:
        if key in self._texts or len(text) > self._limit:
            return
        self._texts[key] = text
        self._bytes += len(text)
        while self._bytes > self._limit:
            _, dropped = self._texts.popitem(last=False)
            self._bytes -= len(dropped)


class ContentMissing(RuntimeError):
    """An item points at an object that is not there, or not as the pointer says."""


class ContentStore:
    """The content bucket of a DynamoBeamStore (`bucket` None: none), its S3 client made on first use."""

    def __init__(self, bucket: str | None, client: S3Client | None = None) -> None:
        self.bucket = bucket or None
        self._client = client
        self.cache = ContentCache()
        # S3 requests made, by operation: what bench/store_calls.py counts
        self.requests = {"PutObject": 0, "GetObject": 0}

    @property
    def client(self) -> S3Client:
        if self._client is None:
            import boto3

            self._client = boto3.client("s3")
        return self._client

    # writes

    def offload(self, writes: list[Write], *, transaction: bool = False) -> None:
        """Put the chosen values in S3 and their pointers in their place (with a bucket), or refuse what
        DynamoDB would refuse (without one)."""
        if self.bucket is None:
            check(writes, transaction=transaction, budget=False)
            return
        plan(writes, transaction=transaction)
        for write in writes:
            for slot in write.chosen:
                slot.container[slot.name] = self.put(write.kind, slot.container[slot.name]["S"])
        check(writes, transaction=transaction, budget=True)

    def put(self, kind: str, text: str) -> dict[str, Any]:
        """The object of `text` (UTF-8), put unless this process put or read it already; its pointer."""
        assert self.bucket is not None
        data = text.encode()
        digest = hashlib.sha256(data)
        key = f"{kind}/{digest.hexdigest()}"
        if self.cache.get(key) is None:
            self.client.put_object(
                Bucket=self.bucket,
                Key=key,
                Body=data,
                ContentType="application/json",
                ChecksumSHA256=base64.b64encode(digest.digest()).decode(),
            )
            self.requests["PutObject"] += 1
            self.cache.keep(key, text)
        return pointer(self.bucket, key, len(data), digest.hexdigest())

    # reads

    def inline(self, item: Item | None) -> Item | None:
        """`item` with each pointer replaced by the text it points at (a string attribute, as stored
        when small); the item itself where it has none."""
        if not item:
            return item
        found = {name: p for name, value in item.items() if name in OFFLOADABLE and (p := pointed(value))}
        if not found:
            return item
        return item | {name: {"S": self.get(p)} for name, p in found.items()}

    def inline_reason(self, reason: Mapping[str, Any]) -> Mapping[str, Any]:
        """A transaction's cancellation reason with the item it carries read whole."""
        item = reason.get("Item")
        return {**reason, "Item": self.inline(item)} if item else reason

    def get(self, fields: Mapping[str, str]) -> str:
        key = fields["key"]
        text = self.cache.get(key)
        if text is not None:
            return text
        try:
            body = self.client.get_object(Bucket=fields["bucket"], Key=key)["Body"].read()
        except Exception as error:
            if getattr(error, "response", {}).get("Error", {}).get("Code") in ("NoSuchKey", "404"):
                raise ContentMissing(f"content object {key} is missing") from None
            raise
        self.requests["GetObject"] += 1
        if len(body) != int(fields["size"]) or hashlib.sha256(body).hexdigest() != fields["sha256"]:
            raise ContentMissing(f"content object {key} is not the content its item points at")
        text = body.decode()
        self.cache.keep(key, text)
        return text

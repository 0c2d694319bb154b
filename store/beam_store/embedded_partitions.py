"""moto's DynamoDB Query answered from the partition it names, not from the whole table.

moto's `Table.query` walks every item of the table, sorted, to keep those of the partition asked for (for
the table's key as for an index's), so a Query's cost grows with the table: 1.9 ms beside a few sessions,
46 ms once 50 had written. Here a table Query reads its partition (moto's own `items[hash_key]`), and an index
Query the items under the index's partition key, found in a map from each index's partition-key value to the
keys of its items, kept in step with every write (put, update, delete, a transaction's rollback). moto still
does all the rest on those items alone (sort, key condition, filter, paging, projection, errors), so the
answers are its own. Anything the map cannot answer (no partition-key condition) goes to moto as before.
"""

from __future__ import annotations

import functools
import inspect
import threading
from collections.abc import Callable
from typing import Any

_MAP = "_riverbeam_partitions"  # the Table's attribute holding its indexes' maps
_lock = threading.RLock()  # the maps may be written by several threads (moto in process)
_scope = threading.local()  # the items a Query on this thread reads, by id(table)

Key = tuple[Any, Any]  # (hash key, range key or None), as moto's DynamoTypes


class _IndexMap:
    """One index's partition-key value -> the keys of the items it holds (dicts as ordered sets)."""

    def __init__(self, attribute: str) -> None:
        self.attribute = attribute
        self.keys: dict[Any, dict[Key, None]] = {}
        self.value_of: dict[Key, Any] = {}

    def place(self, key: Key, item: Any) -> None:
        old = self.value_of.pop(key, None)
        if old is not None:
            keys = self.keys[old]
            keys.pop(key, None)
            if not keys:
                del self.keys[old]
        value = item.attrs.get(self.attribute) if item is not None else None
        if value is not None:
            self.value_of[key] = value
            self.keys.setdefault(value, {})[key] = None


def _current(table: Any, hash_key: Any, range_key: Any) -> Any:
    """The item stored under the key, or None (never adding to moto's defaultdict)."""
    partition = table.items.get(hash_key)
    if table.range_key_attr is None or partition is None:
        return partition
    return partition.get(range_key)


def _partition_items(table: Any, hash_key: Any) -> list[Any]:
    partition = table.items.get(hash_key)
    if partition is None:
        return []
    return list(partition.values()) if table.range_key_attr is not None else [partition]


def _index_map(table: Any, index_name: str, attribute: str) -> _IndexMap:
    """The index's map, built from the items now stored when first asked for (or when its key changed)."""
    maps: dict[str, _IndexMap] = table.__dict__.setdefault(_MAP, {})
    found = maps.get(index_name)
    if found is None or found.attribute != attribute:
        found = _IndexMap(attribute)
        for partition in list(table.items.values()):
            for item in partition.values() if table.range_key_attr is not None else [partition]:
                found.place((item.hash_key, item.range_key), item)
        maps[index_name] = found
    return found


def touched(table: Any, hash_key: Any, range_key: Any) -> None:
    """Keep the table's index maps in step with the item now stored under the key (written or gone)."""
    with _lock:
        maps: dict[str, _IndexMap] = table.__dict__.get(_MAP) or {}
        if maps:
            item = _current(table, hash_key, range_key)
            for found in maps.values():
                found.place((hash_key, range_key), item)


def _candidates(table: Any, arguments: dict[str, Any]) -> list[Any] | None:
    """The items the Query can match, sorted as moto's all_items sorts them; None: moto's own way."""
    index_name = arguments.get("index_name")
    if not index_name:
        hash_key = arguments.get("hash_key")
        return None if hash_key is None else _sorted(_partition_items(table, hash_key))
    index = next((i for i in table.all_indexes() if i.name == index_name), None)
    hashes = [k["AttributeName"] for k in index.schema if k["KeyType"] == "HASH"] if index else []
    conditions = dict(arguments.get("hash_key_conditions") or [])
    if not hashes or hashes[0] not in conditions:
        return None  # an unknown index or no condition on its key: moto says what is wrong
    value = conditions[hashes[0]]
    if hashes[0] == table.hash_key_attr:  # a local index: the table's own partition
        return _sorted(_partition_items(table, value))
    with _lock:
        keys = list(_index_map(table, index_name, hashes[0]).keys.get(value, ()))
        items = [_current(table, *key) for key in keys]
    return _sorted([item for item in items if item is not None])


def _sorted(items: list[Any]) -> list[Any]:
    return sorted(items, key=lambda x: (x.hash_key, x.range_key) if x.range_key else x.hash_key)


def install_partition_queries() -> None:
    """Patch moto's DynamoDB (in this process) to answer each Query from its partition."""
    from moto.dynamodb import models
    from moto.dynamodb.models.table import Table

    if getattr(Table.query, "_partitions", False):
        return
    query, all_items = Table.query, Table.all_items
    signature = inspect.signature(query)

    @functools.wraps(query)
    def partition_query(self: Any, *args: Any, **kwargs: Any) -> Any:
        candidates = _candidates(self, signature.bind(self, *args, **kwargs).arguments)
        if candidates is None:
            return query(self, *args, **kwargs)
        reading: dict[int, list[Any]] = _scope.__dict__.setdefault("tables", {})
        reading[id(self)] = candidates
        try:
            return query(self, *args, **kwargs)
        finally:
            del reading[id(self)]

    @functools.wraps(all_items)
    def items_read(self: Any) -> list[Any]:
        reading = _scope.__dict__.get("tables")
        found = reading.get(id(self)) if reading else None
        return list(found) if found is not None else all_items(self)

    Table.all_items = items_read  # type: ignore[method-assign]
    Table.put_item = _after_put(Table.put_item)  # type: ignore[method-assign]
    Table.delete_item = _after_delete(Table.delete_item)  # type: ignore[method-assign]
    models.DynamoDBBackend.update_item = _after_update(models.DynamoDBBackend.update_item)  # type: ignore[method-assign]
    partition_query._partitions = True  # type: ignore[attr-defined]
    Table.query = partition_query  # type: ignore[method-assign]


def _after_put(put: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(put)
    def put_item(self: Any, *args: Any, **kwargs: Any) -> Any:
        item = put(self, *args, **kwargs)
        touched(self, item.hash_key, item.range_key)
        return item

    return put_item


def _after_delete(delete: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(delete)
    def delete_item(self: Any, hash_key: Any, range_key: Any) -> Any:
        try:
            return delete(self, hash_key, range_key)
        finally:
            touched(self, hash_key, range_key)

    return delete_item


def _after_update(update: Callable[..., Any]) -> Callable[..., Any]:
    signature = inspect.signature(update)

    @functools.wraps(update)
    def update_item(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return update(self, *args, **kwargs)
        finally:  # a failed update may have changed the item part way (moto updates it in place)
            try:
                arguments = signature.bind(self, *args, **kwargs).arguments
                table = self.get_table(arguments["table_name"])
                hash_key, range_key = self.get_keys_value(table, arguments["key"])
            except Exception:  # no such table or key: nothing was written
                table = None
            if table is not None:
                touched(table, hash_key, range_key)

    return update_item

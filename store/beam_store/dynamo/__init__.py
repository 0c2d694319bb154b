"""DynamoBeamStore: the store (store.py) on one table (table.py), its items (items.py), a step as one
transaction and its conflicts read back (transaction.py), and the expressions they are written with
(expressions.py)."""

from .items import deserialize_item, record_attrs, serialize, serialize_attr, serialize_json
from .retry import MAX_ATTEMPTS, MAX_SECONDS
from .store import DynamoBeamStore
from .table import TABLE_DEFINITION, ensure_table

__all__ = [
    "MAX_ATTEMPTS",
    "MAX_SECONDS",
    "TABLE_DEFINITION",
    "DynamoBeamStore",
    "deserialize_item",
    "ensure_table",
    "record_attrs",
    "serialize",
    "serialize_attr",
    "serialize_json",
]

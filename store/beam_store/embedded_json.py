"""moto's answers to the item requests (GetItem, Query, the writes, the transactions, the stream's records)
written out as the JSON they already are, not walked through the service model member by member.

moto builds each answer as plain values in the wire's own shape (DynamoDB JSON items, counts, keys), then its
generic serializer visits every member of every attribute value against botocore's model: about 30% of the
embedded server's CPU under load. For these operations the result's top-level members are kept as the model
names them, bytes are base64 and times epoch seconds, as that serializer writes them; tests compare the two
answers for every such operation.
"""

from __future__ import annotations

import base64
import functools
from datetime import datetime
from typing import Any

# the operations whose results are plain wire-shaped values (no renamed or transformed members)
OPERATIONS = frozenset(
    {
        "GetItem",
        "Query",
        "Scan",
        "PutItem",
        "UpdateItem",
        "DeleteItem",
        "TransactWriteItems",
        "TransactGetItems",
        "BatchGetItem",
        "BatchWriteItem",
        "GetRecords",
    }
)
SERVICES = frozenset({"dynamodb", "dynamodbstreams"})


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, datetime):
        from moto.core.utils import unix_time

        return unix_time(value)
    return value


def install_plain_json() -> None:
    """Patch moto's JSON serializer (in this process) to write these operations' results directly."""
    from moto.core.serialize import JSONSerializer

    original = JSONSerializer._serialize_result
    if getattr(original, "_plain", False):
        return

    @functools.wraps(original)
    def serialize_result(self: Any, resp: Any, result: Any) -> Any:
        shape = self.operation_model.output_shape
        if (
            not isinstance(result, dict)
            or shape is None
            or self.operation_model.name not in OPERATIONS
            or self.service_model.service_name not in SERVICES
        ):
            return original(self, resp, result)
        members = shape.members
        plain = {k: _plain(v) for k, v in result.items() if k in members and v is not None}
        return self._serialized_result_to_response(resp, result, shape, plain)

    serialize_result._plain = True  # type: ignore[attr-defined]
    JSONSerializer._serialize_result = serialize_result  # type: ignore[method-assign]

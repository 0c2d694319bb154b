"""The table DynamoBeamStore keeps its items in: one on-demand table, four indexes, a TTL, a stream."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from .items import GSI1, GSI2, GSI3, GSI4, TTL_ATTRIBUTE

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient
else:
    DynamoDBClient = Any

# how long connecting waits for an index it added to a table made before it
INDEX_WAIT_SECONDS = 1800
TABLE_DEFINITION: dict[str, Any] = {
    "AttributeDefinitions": [
        {"AttributeName": name, "AttributeType": "S"}
        for name in (
            "pk",
            "sk",
            "gsi1pk",
            "gsi1sk",
            "gsi2pk",
            "gsi2sk",
            "gsi3pk",
            "gsi3sk",
            "gsi4pk",
            "gsi4sk",
        )
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
        },
        {
            "IndexName": GSI2,
            "KeySchema": [
                {"AttributeName": "gsi2pk", "KeyType": "HASH"},
                {"AttributeName": "gsi2sk", "KeyType": "RANGE"},
            ],
            "Projection": {"ProjectionType": "ALL"},
        },
        {
            "IndexName": GSI3,
            "KeySchema": [
                {"AttributeName": "gsi3pk", "KeyType": "HASH"},
                {"AttributeName": "gsi3sk", "KeyType": "RANGE"},
            ],
            "Projection": {"ProjectionType": "ALL"},
        },
        {
            "IndexName": GSI4,
            "KeySchema": [
                {"AttributeName": "gsi4pk", "KeyType": "HASH"},
                {"AttributeName": "gsi4sk", "KeyType": "RANGE"},
            ],
            "Projection": {"ProjectionType": "ALL"},
        },
    ],
    "BillingMode": "PAY_PER_REQUEST",
    # the outbox items each write inserts are published from it (outbox.py)
    "StreamSpecification": {"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"},
}


def add_missing_indexes(client: Any, table_name: str, definition: dict[str, Any], table: Any) -> None:
    """Add to a table created before them the indexes of `definition` it lacks (gsi2-gsi4 came later)."""
    have = {index["IndexName"] for index in table.get("GlobalSecondaryIndexes", [])}
    for index in definition.get("GlobalSecondaryIndexes", []):
        if index["IndexName"] in have:
            continue
        names = {k["AttributeName"] for k in index["KeySchema"]}
        client.update_table(
            TableName=table_name,
            AttributeDefinitions=[
                a for a in definition["AttributeDefinitions"] if a["AttributeName"] in names
            ],
            GlobalSecondaryIndexUpdates=[{"Create": index}],
        )
        _wait_index_active(client, table_name, index["IndexName"])


def add_missing_stream(client: Any, table_name: str, definition: dict[str, Any], table: Any) -> None:
    """Switch on the stream of `definition` on a table created before it (the outbox came later)."""
    wanted = definition.get("StreamSpecification")
    if wanted and not (table.get("StreamSpecification") or {}).get("StreamEnabled"):
        client.update_table(TableName=table_name, StreamSpecification=wanted)


def _wait_index_active(client: Any, table_name: str, index_name: str) -> None:
    """DynamoDB builds one new index at a time (the table stays ACTIVE meanwhile): wait for this one
    before the next is asked for (bounded: an index of a large table takes minutes to fill)."""
    deadline = time.monotonic() + INDEX_WAIT_SECONDS
    while time.monotonic() < deadline:
        table = client.describe_table(TableName=table_name)["Table"]
        status = {i["IndexName"]: i.get("IndexStatus") for i in table.get("GlobalSecondaryIndexes", [])}
        if table.get("TableStatus") == "ACTIVE" and status.get(index_name) in ("ACTIVE", None):
            return
        time.sleep(1)
    raise TimeoutError(f"index {index_name} of {table_name} was not active after {INDEX_WAIT_SECONDS}s")


def ensure_table(client: DynamoDBClient, table_name: str) -> None:
    """Create the table with its indexes, stream and TTL unless it exists (then add the indexes and the
    stream it lacks); wait until it is active."""
    try:
        described = client.describe_table(TableName=table_name)
        add_missing_indexes(client, table_name, TABLE_DEFINITION, described["Table"])
        add_missing_stream(client, table_name, TABLE_DEFINITION, described["Table"])
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

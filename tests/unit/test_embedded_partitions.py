"""moto's Query answered from its partition (beam_store.embedded_partitions) gives the answers a Scan of the
table implies: after puts, updates that move an item between an index's partitions or out of the index,
deletes, batch writes, and transactions and conditional writes that fail part way, every table and index
Query returns exactly the items stored under its key, in its sort order, through pages; and it is answered
from the partition, not the table."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from beam_store import embedded_partitions
from beam_store.dynamo.table import TABLE_DEFINITION
from botocore.exceptions import ClientError
from moto import mock_aws

from tests.support.stores import serialized_moto

TABLE = "partitions"
PARTITIONS = [f"SESSION#{n}" for n in range(6)]
GROUPS = [f"INTERACTION#{n}" for n in range(4)]


@pytest.fixture
def client() -> Iterator[Any]:
    with mock_aws(), serialized_moto():
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        dynamodb.create_table(TableName=TABLE, **TABLE_DEFINITION)
        yield dynamodb


@pytest.fixture
def fast_paths(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether each Query was answered from a partition (True) or went to moto's scan (False)."""
    seen: list[bool] = []
    original = embedded_partitions._candidates

    def recorded(table: Any, arguments: dict[str, Any]) -> list[Any] | None:
        found = original(table, arguments)
        seen.append(found is not None)
        return found

    monkeypatch.setattr(embedded_partitions, "_candidates", recorded)
    return seen


def _item(rng: random.Random, pk: str, sk: str) -> dict[str, Any]:
    item: dict[str, Any] = {"pk": {"S": pk}, "sk": {"S": sk}, "n": {"N": str(rng.randint(0, 9))}}
    if rng.random() < 0.7:
        item["gsi1pk"] = {"S": rng.choice(GROUPS)}
        item["gsi1sk"] = {"S": f"RUN#{rng.randint(0, 999):03d}"}
    return item


def _key(rng: random.Random) -> dict[str, Any]:
    return {"pk": {"S": rng.choice(PARTITIONS)}, "sk": {"S": f"MSG#{rng.randint(0, 7)}"}}


def _update(rng: random.Random, client: Any, key: dict[str, Any]) -> None:
    if rng.random() < 0.5:  # into another of gsi1's partitions
        expression, values = (
            "SET gsi1pk = :g, gsi1sk = :s",
            {
                ":g": {"S": rng.choice(GROUPS)},
                ":s": {"S": f"RUN#{rng.randint(0, 999):03d}"},
            },
        )
        client.update_item(
            TableName=TABLE, Key=key, UpdateExpression=expression, ExpressionAttributeValues=values
        )
    else:  # out of gsi1
        client.update_item(TableName=TABLE, Key=key, UpdateExpression="REMOVE gsi1pk, gsi1sk")


def _transaction(rng: random.Random, client: Any) -> None:
    """Two writes and, half the time, a third whose condition fails: then none is kept."""
    keys = rng.sample([{"pk": {"S": p}, "sk": {"S": f"MSG#{s}"}} for p in PARTITIONS for s in range(8)], 3)
    items: list[dict[str, Any]] = [
        {"Put": {"TableName": TABLE, "Item": _item(rng, k["pk"]["S"], k["sk"]["S"])}} for k in keys[:2]
    ]
    if rng.random() < 0.5:
        items.append(
            {
                "ConditionCheck": {
                    "TableName": TABLE,
                    "Key": keys[2],
                    "ConditionExpression": "n = :x",
                    "ExpressionAttributeValues": {":x": {"N": "-1"}},
                }
            }
        )
    try:
        client.transact_write_items(TransactItems=items)
    except ClientError as error:
        assert error.response["Error"]["Code"] == "TransactionCanceledException"


def _random_write(rng: random.Random, client: Any) -> None:
    key = _key(rng)
    choice = rng.randrange(6)
    if choice == 0:
        client.put_item(TableName=TABLE, Item=_item(rng, key["pk"]["S"], key["sk"]["S"]))
    elif choice == 1:
        _update(rng, client, key)
    elif choice == 2:
        client.delete_item(TableName=TABLE, Key=key)
    elif choice == 3:
        batch = {_key(rng)["sk"]["S"]: _item(rng, rng.choice(PARTITIONS), f"MSG#{n}") for n in range(3)}
        requests = [{"PutRequest": {"Item": item}} for item in batch.values()]
        client.batch_write_item(RequestItems={TABLE: requests})
    elif choice == 4:
        _transaction(rng, client)
    else:  # a conditional update that fails changes nothing
        with pytest.raises(ClientError, match="ConditionalCheckFailed"):
            client.update_item(
                TableName=TABLE,
                Key=key,
                UpdateExpression="SET gsi1pk = :g",
                ConditionExpression="n = :x",
                ExpressionAttributeValues={":g": {"S": GROUPS[0]}, ":x": {"N": "-1"}},
            )


def _query(client: Any, **kwargs: Any) -> list[tuple[str, str]]:
    """Every page of a Query (2 items a page), as (pk, sk) in the order returned."""
    found: list[tuple[str, str]] = []
    start: dict[str, Any] = {}
    while True:
        page = client.query(TableName=TABLE, Limit=2, **kwargs, **start)
        found += [(i["pk"]["S"], i["sk"]["S"]) for i in page["Items"]]
        if "LastEvaluatedKey" not in page:
            return found
        start = {"ExclusiveStartKey": page["LastEvaluatedKey"]}


def _stored(client: Any) -> list[dict[str, Any]]:
    return client.scan(TableName=TABLE, ConsistentRead=True)["Items"]


def _check_every_query(client: Any) -> None:
    stored = _stored(client)
    for pk in PARTITIONS:
        expected = sorted((i["pk"]["S"], i["sk"]["S"]) for i in stored if i["pk"]["S"] == pk)
        values = {":pk": {"S": pk}}
        assert _query(client, KeyConditionExpression="pk = :pk", ExpressionAttributeValues=values) == expected
        backwards = _query(
            client,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues=values,
            ScanIndexForward=False,
        )
        assert backwards == expected[::-1]
    for group in GROUPS:
        members = sorted(
            (i["gsi1sk"]["S"], i["pk"]["S"], i["sk"]["S"])
            for i in stored
            if i.get("gsi1pk", {}).get("S") == group
        )
        values = {":g": {"S": group}}
        answer = _query(
            client, IndexName="gsi1", KeyConditionExpression="gsi1pk = :g", ExpressionAttributeValues=values
        )
        assert sorted(answer) == sorted((pk, sk) for _, pk, sk in members)
        ranks = {(pk, sk): rank for rank, pk, sk in members}
        assert [ranks[k] for k in answer] == sorted(ranks[k] for k in answer)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_queries_match_the_stored_items_after_random_writes(
    client: Any, fast_paths: list[bool], seed: int
) -> None:
    rng = random.Random(seed)
    for _round in range(8):
        for _write in range(15):
            _random_write(rng, client)
        _check_every_query(client)
    assert len(_stored(client)) > 10  # the checks above saw items, not only empty partitions
    assert fast_paths and all(fast_paths)


def test_a_range_condition_and_a_filter_work_on_the_partition(client: Any, fast_paths: list[bool]) -> None:
    for n in range(5):
        client.put_item(TableName=TABLE, Item={"pk": {"S": "S"}, "sk": {"S": f"MSG#{n}"}, "n": {"N": str(n)}})
    client.put_item(TableName=TABLE, Item={"pk": {"S": "T"}, "sk": {"S": "MSG#9"}, "n": {"N": "9"}})
    answer = client.query(
        TableName=TABLE,
        KeyConditionExpression="pk = :pk AND sk BETWEEN :a AND :b",
        FilterExpression="n <> :skip",
        ExpressionAttributeValues={
            ":pk": {"S": "S"},
            ":a": {"S": "MSG#1"},
            ":b": {"S": "MSG#4"},
            ":skip": {"N": "2"},
        },
    )
    assert [i["sk"]["S"] for i in answer["Items"]] == ["MSG#1", "MSG#3", "MSG#4"]
    assert answer["ScannedCount"] == 4
    assert fast_paths == [True]


def test_an_index_added_later_sees_the_items_written_before(client: Any) -> None:
    for n in range(3):
        client.put_item(TableName=TABLE, Item={"pk": {"S": f"A#{n}"}, "sk": {"S": "A"}, "tag": {"S": "t"}})
    client.update_table(
        TableName=TABLE,
        AttributeDefinitions=[{"AttributeName": "tag", "AttributeType": "S"}],
        GlobalSecondaryIndexUpdates=[
            {
                "Create": {
                    "IndexName": "by_tag",
                    "KeySchema": [{"AttributeName": "tag", "KeyType": "HASH"}],
                    "Projection": {"ProjectionType": "ALL"},
                }
            }
        ],
    )
    values = {":t": {"S": "t"}}
    answer = client.query(
        TableName=TABLE,
        IndexName="by_tag",
        KeyConditionExpression="tag = :t",
        ExpressionAttributeValues=values,
    )
    assert sorted(i["pk"]["S"] for i in answer["Items"]) == ["A#0", "A#1", "A#2"]


def test_bad_queries_get_moto_s_own_errors(client: Any) -> None:
    with pytest.raises(ClientError, match=r"Invalid index"):
        client.query(
            TableName=TABLE,
            IndexName="nope",
            KeyConditionExpression="x = :x",
            ExpressionAttributeValues={":x": {"S": "x"}},
        )
    with pytest.raises(ClientError, match="ValidationException"):
        client.query(
            TableName=TABLE,
            IndexName="gsi1",
            KeyConditionExpression="gsi1pk = :g",
            ConsistentRead=True,
            ExpressionAttributeValues={":g": {"S": "g"}},
        )

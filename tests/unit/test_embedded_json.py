"""moto's item answers written as plain JSON (beam_store.embedded_json) are the answers its own serializer
gives: the same requests on a fresh moto, once with each, get equal answers, every attribute type (binary
ones too), capacity, paging keys, transactions, batches, conditional failures and the stream's records."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import boto3
import pytest
from beam_store.embedded import prepare_moto
from botocore.exceptions import ClientError
from moto import mock_aws
from moto.core.serialize import JSONSerializer

TABLE = "plain"
ITEM = {
    "pk": {"S": "A"},
    "sk": {"S": "1"},
    "s": {"S": "text ünïcode"},
    "n": {"N": "12.50"},
    "b": {"B": b"\x00\x01binary"},
    "ss": {"SS": ["x", "y"]},
    "ns": {"NS": ["1", "2.5"]},
    "bs": {"BS": [b"\x02", b"\x03"]},
    "m": {"M": {"inner": {"L": [{"S": "v"}, {"N": "3"}, {"BOOL": True}, {"NULL": True}]}}},
    "empty": {"S": ""},
}
KEY = {"pk": {"S": "A"}, "sk": {"S": "1"}}
CAPACITY = {"ReturnConsumedCapacity": "TOTAL"}
# moto's per-request values, not the serializer's doing (a stream record's SizeBytes varies by a byte from
# one run of moto to the next, whichever serializer writes it)
VOLATILE = {
    "ResponseMetadata",
    "ApproximateCreationDateTime",
    "NextShardIterator",
    "SequenceNumber",
    "eventID",
    "SizeBytes",
}


def _stable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_stable(v) for v in value]
    return value


def _answer(call: Callable[[], Any]) -> Any:
    try:
        return _stable(call())
    except ClientError as error:
        return {"error": error.response["Error"]["Code"], "item": _stable(error.response.get("Item"))}


def _scenario(client: Any, streams: Any) -> list[Any]:
    client.create_table(
        TableName=TABLE,
        AttributeDefinitions=[{"AttributeName": a, "AttributeType": "S"} for a in ("pk", "sk")],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        BillingMode="PAY_PER_REQUEST",
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
    )
    two = {**ITEM, "sk": {"S": "2"}}
    calls: list[Callable[[], Any]] = [
        lambda: client.put_item(TableName=TABLE, Item=ITEM, ReturnValues="ALL_OLD", **CAPACITY),
        lambda: client.put_item(TableName=TABLE, Item=ITEM, ReturnValues="ALL_OLD", **CAPACITY),
        lambda: client.get_item(TableName=TABLE, Key=KEY, ConsistentRead=True, **CAPACITY),
        lambda: client.get_item(TableName=TABLE, Key={"pk": {"S": "none"}, "sk": {"S": "1"}}),
        lambda: client.update_item(
            TableName=TABLE,
            Key=KEY,
            UpdateExpression="SET n = n + :one, added = :b",
            ExpressionAttributeValues={":one": {"N": "1"}, ":b": {"B": b"\xff"}},
            ReturnValues="ALL_NEW",
            **CAPACITY,
        ),
        lambda: client.update_item(
            TableName=TABLE,
            Key=KEY,
            UpdateExpression="SET n = :x",
            ConditionExpression="attribute_not_exists(pk)",
            ExpressionAttributeValues={":x": {"N": "0"}},
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        ),
        lambda: client.batch_write_item(RequestItems={TABLE: [{"PutRequest": {"Item": two}}]}, **CAPACITY),
        lambda: client.query(
            TableName=TABLE,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": {"S": "A"}},
            Limit=1,
            **CAPACITY,
        ),
        lambda: client.query(
            TableName=TABLE,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": {"S": "A"}},
            Select="COUNT",
        ),
        lambda: client.scan(TableName=TABLE, ProjectionExpression="pk, b, m.inner", **CAPACITY),
        lambda: client.batch_get_item(RequestItems={TABLE: {"Keys": [KEY, {**KEY, "sk": {"S": "2"}}]}}),
        lambda: client.transact_get_items(TransactItems=[{"Get": {"TableName": TABLE, "Key": KEY}}]),
        lambda: client.transact_write_items(
            TransactItems=[
                {"Put": {"TableName": TABLE, "Item": {**ITEM, "sk": {"S": "3"}}}},
                {"Delete": {"TableName": TABLE, "Key": {**KEY, "sk": {"S": "2"}}}},
            ],
            **CAPACITY,
        ),
        lambda: client.transact_write_items(
            TransactItems=[
                {
                    "ConditionCheck": {
                        "TableName": TABLE,
                        "Key": KEY,
                        "ConditionExpression": "attribute_not_exists(pk)",
                        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                    }
                }
            ]
        ),
        lambda: client.delete_item(TableName=TABLE, Key=KEY, ReturnValues="ALL_OLD", **CAPACITY),
    ]
    answers = [_answer(call) for call in calls]
    arn = client.describe_table(TableName=TABLE)["Table"]["LatestStreamArn"]
    shard = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"][0]["ShardId"]
    iterator = streams.get_shard_iterator(StreamArn=arn, ShardId=shard, ShardIteratorType="TRIM_HORIZON")
    answers.append(_answer(lambda: streams.get_records(ShardIterator=iterator["ShardIterator"])))
    return answers


def _run() -> list[Any]:
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        streams = boto3.client("dynamodbstreams", region_name="us-east-1")
        return _scenario(client, streams)


def test_every_answer_is_the_one_moto_s_serializer_gives(monkeypatch: pytest.MonkeyPatch) -> None:
    prepare_moto()
    plain = JSONSerializer._serialize_result
    assert getattr(plain, "_plain", False)
    with monkeypatch.context() as original:
        original.setattr(JSONSerializer, "_serialize_result", plain.__wrapped__)  # type: ignore[attr-defined]
        expected = _run()
    answers = _run()
    assert len(answers) == 16
    for index, (got, want) in enumerate(zip(answers, expected, strict=True)):
        assert got == want, (index, json.dumps(got, default=str)[:800], json.dumps(want, default=str)[:800])
    records = answers[-1]["Records"]
    assert [r["eventName"] for r in records] == [
        "INSERT",
        "MODIFY",
        "MODIFY",
        "INSERT",
        "INSERT",
        "REMOVE",
        "REMOVE",
    ]
    assert answers[2]["Item"]["b"] == {"B": b"\x00\x01binary"}  # bytes came back as bytes

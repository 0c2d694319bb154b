"""An approval event outlives the process that wrote it: on the DynamoDB-compatible server, a process runs an
invoke whose agent asks for approval and exits (os._exit) as soon as DynamoDB has answered the run's
closing write, before anything after it runs (its event sink is never called). The events function, fed
the table's stream as the event source mapping feeds it, then puts the `Approval Requested` on the bus
(the server's EventBridge, a rule to a queue reads it back), and again, with the same id and detail, when
the same records are delivered again."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import boto3
import pytest
from beam_store import DynamoBeamStore
from botocore.config import Config
from riverbeam.aws import runtime
from riverbeam_local.lambda_like import LambdaContext, matches, stream_record

from tests.support.lambda_stack import function_handler, stream_filter
from tests.support.stores import REGION, dynamodb_client

ROOT = Path(__file__).resolve().parents[2]
EXITED = 3
# the child: an invoke that asks for approval, ended by os._exit right after its closing write committed
CHILD = """
import os, sys
from beam_store import DynamoBeamStore
from riverbeam import EventLog
from tests.support.agents import author_beam, invoke_body
from tests.support.stores import dynamodb_client

url, table, session_id = sys.argv[1:]
client = dynamodb_client(url)
with_events = []

def before(params, **_):
    items = params.get("TransactItems", [])
    with_events.append(any("Put" in i and i["Put"]["Item"]["pk"]["S"].startswith("OUTBOX#") for i in items))

def after(parsed, **_):
    if with_events[-1] and parsed.get("ResponseMetadata", {}).get("HTTPStatusCode") == 200:
        os._exit(3)  # the write committed; nothing after it runs

client.meta.events.register("before-parameter-build.dynamodb.TransactWriteItems", before)
client.meta.events.register("after-call.dynamodb.TransactWriteItems", after)
beam, _ = author_beam(DynamoBeamStore(client, table))
sink = EventLog()
beam.set_event_sink(sink)
beam.invoke(invoke_body(session_id, "u1"))
print("the process did not exit after its closing write; its sink got", len(sink), flush=True)
"""


def _bus_to_queue(url: str, bus: str) -> tuple[Any, str]:
    events = boto3.client("events", region_name=REGION, endpoint_url=url)
    sqs = boto3.client("sqs", region_name=REGION, endpoint_url=url)
    events.create_event_bus(Name=bus)
    queue = sqs.create_queue(QueueName=f"{bus}-read")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    events.put_rule(Name="all", EventBusName=bus, EventPattern=json.dumps({"source": ["riverbeam"]}))
    events.put_targets(Rule="all", EventBusName=bus, Targets=[{"Id": "queue", "Arn": arn}])
    return sqs, queue


def _read(sqs: Any, queue: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for _ in range(50):
        got = sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10, WaitTimeSeconds=0).get(
            "Messages", []
        )
        if not got:
            return found
        for m in got:
            found.append(json.loads(m["Body"]))
            sqs.delete_message(QueueUrl=queue, ReceiptHandle=m["ReceiptHandle"])
    raise AssertionError("the queue was not empty after 50 reads")


def _stream_records(url: str, table: str) -> list[dict[str, Any]]:
    """The table's stream from its start, as the event source mapping hands it on (the template's filter)."""
    arn = dynamodb_client(url).describe_table(TableName=table)["Table"]["LatestStreamArn"]
    streams = boto3.client(
        "dynamodbstreams", region_name=REGION, endpoint_url=url, config=Config(retries={"max_attempts": 3})
    )
    (shard,) = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"]
    iterator = streams.get_shard_iterator(
        StreamArn=arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
    )
    found: list[dict[str, Any]] = []
    position = iterator["ShardIterator"]
    for _ in range(50):
        answer = streams.get_records(ShardIterator=position, Limit=100)
        position = answer["NextShardIterator"]
        if not answer["Records"]:
            break
        found += [stream_record(r, arn) for r in answer["Records"]]
    return [r for r in found if matches(stream_filter(), r)]


@pytest.mark.realserver
@pytest.mark.timeout(600)
def test_the_event_of_a_process_that_exited_after_its_commit_is_put_with_its_id_on_every_delivery(
    dynamodb_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    table, bus, session_id = f"exit-{uuid.uuid4().hex[:8]}", f"bus-{uuid.uuid4().hex[:8]}", str(uuid.uuid4())
    store = DynamoBeamStore.connect(table, client=dynamodb_client(dynamodb_url))
    sqs, queue = _bus_to_queue(dynamodb_url, bus)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    child = subprocess.run(
        [sys.executable, "-c", CHILD, dynamodb_url, table, session_id],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert child.returncode == EXITED, (child.stdout, child.stderr[-3000:])
    (action,) = store.list_session_actions(session_id)
    assert action.status == "pending"  # the closing write committed before the process ended
    assert _read(sqs, queue) == []  # nothing was put

    monkeypatch.setenv("TABLE_NAME", table)
    monkeypatch.setenv("EVENT_BUS_NAME", bus)
    monkeypatch.setenv("AWS_ENDPOINT_URL_EVENTBRIDGE", dynamodb_url)
    runtime.reset()
    try:
        handler = function_handler("events")
        records = _stream_records(dynamodb_url, table)
        assert len(records) == 1
        deliveries = []
        for _ in range(2):  # the stream's delivery, then the same record delivered again
            assert handler({"Records": records}, LambdaContext("riverbeam-events", 900)) == {
                "batchItemFailures": []
            }
            (put,) = _read(sqs, queue)
            deliveries.append(put)
    finally:
        runtime.reset()
    want = f"evt_{action.action_id}_requested"
    assert [(d["detail-type"], d["detail"]["id"]) for d in deliveries] == [("Approval Requested", want)] * 2
    assert deliveries[0]["detail"] == deliveries[1]["detail"]
    assert deliveries[0]["detail"]["action_id"] == action.action_id
    assert deliveries[0]["detail"]["args"] == {"ref": "docs/update"}

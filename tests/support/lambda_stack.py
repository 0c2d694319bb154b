"""The deployment under test: template.yaml's table and queues on moto, the handlers of functions/ loaded
as Lambda loads them, and events built from the samples in events/."""

from __future__ import annotations

import copy
import json
import os
import urllib.parse
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
from botocore.awsrequest import AWSResponse
from botocore.config import Config
from moto import mock_aws
from riverbeam.aws import runtime
from riverbeam_local.lambda_like import (
    Handler,
    LambdaContext,
    load_handler,
    matches,
    sqs_record,
    stream_record,
)
from riverbeam_local.stack.template import read as read_template

from tests.support.aws_calls import Call, Recorder, recording
from tests.support.stores import REGION, serialized_moto

ROOT = Path(__file__).resolve().parents[2]
EVENTS = ROOT / "events"
ACCOUNT = "123456789012"
WEBSOCKET_ENDPOINT = "https://wsapi12345.execute-api.us-east-1.amazonaws.com/v1"
FUNCTIONS = ("invoke", "resume", "records", "connections", "worker", "sweep", "events")
# the stream records a read takes at most (a test writes far fewer)
STREAM_READS = 50


def template() -> dict[str, Any]:
    """template.yaml, read as the local stack reads it."""
    return read_template(ROOT)


def resources_of(kind: str) -> dict[str, dict[str, Any]]:
    return {name: r for name, r in template()["Resources"].items() if r["Type"] == kind}


def table_definition() -> dict[str, Any]:
    """The create_table arguments of the template's table, exactly as written there (its stream in the
    API's form)."""
    (table,) = resources_of("AWS::DynamoDB::Table").values()
    props = table["Properties"]
    keys = ("AttributeDefinitions", "KeySchema", "GlobalSecondaryIndexes", "BillingMode")
    stream = {"StreamEnabled": True, "StreamViewType": props["StreamSpecification"]["StreamViewType"]}
    return {k: props[k] for k in keys} | {"StreamSpecification": stream}


def stream_filter() -> dict[str, Any]:
    """The pattern of the FilterCriteria of the table stream's event source mapping."""
    (mapping,) = [
        m["Properties"]
        for m in resources_of("AWS::Lambda::EventSourceMapping").values()
        if "StreamArn" in str(m["Properties"]["EventSourceArn"])
        and m["Properties"]["FunctionName"] == {"Ref": "EventsFunction"}
    ]
    (only,) = mapping["FilterCriteria"]["Filters"]
    return json.loads(only["Pattern"])  # type: ignore[no-any-return]


def event(name: str) -> dict[str, Any]:
    """A sample event of events/, e.g. "invoke/http"."""
    return json.loads((EVENTS / f"{name}.json").read_text())  # type: ignore[no-any-return]


def http_event(
    sample: str,
    *,
    body: dict[str, Any] | str | None = None,
    path: str | None = None,
    query: dict[str, str] | None = None,
    sub: str | None = "u1",
) -> dict[str, Any]:
    """An HTTP API (payload 2.0) event built from a sample: another body, path, query or caller."""
    e = copy.deepcopy(event(sample))
    e["requestContext"]["requestId"] = str(uuid.uuid4())
    if body is not None:
        e["body"] = body if isinstance(body, str) else json.dumps(body)
    if path is not None:  # the stage leads the path, as API Gateway sends it for a named stage
        e["rawPath"] = e["requestContext"]["http"]["path"] = f"/{e['requestContext']['stage']}{path}"
    if query is not None:
        e["queryStringParameters"] = query
        e["rawQueryString"] = urllib.parse.urlencode(query)
    if sub is None:
        e["requestContext"].pop("authorizer", None)
    else:
        e["requestContext"].setdefault("authorizer", {"jwt": {"claims": {}, "scopes": None}})
        e["requestContext"]["authorizer"]["jwt"]["claims"]["sub"] = sub
    return e


def ws_event(
    sample: str, *, connection_id: str, body: dict[str, Any] | None = None, **query: str
) -> dict[str, Any]:
    """A WebSocket event built from a sample: its connection, and a body or a $connect query."""
    e = copy.deepcopy(event(sample))
    e["requestContext"]["connectionId"] = connection_id
    e["requestContext"]["requestId"] = str(uuid.uuid4())
    if body is not None:
        e["body"] = json.dumps(body)
    if query:
        e["queryStringParameters"] = dict(query)
        e["multiValueQueryStringParameters"] = {k: [v] for k, v in query.items()}
    return e


def function_handler(name: str) -> Handler:
    """functions/<name>/app.py's handler as Lambda loads it: by its file, with the layer's packages on the
    path."""
    return load_handler(ROOT / "functions" / name / "app.py", f"riverbeam_function_{name}")


@dataclass
class Stack:
    table_name: str
    queue_url: str
    dead_letter_url: str
    handlers: dict[str, Handler]
    sqs: Any
    # the AWS calls each function made (tests/support/aws_calls.py)
    recorder: Recorder = field(default_factory=Recorder)
    gone: set[str] = field(default_factory=set)
    # where the table's stream has been read up to (None: not yet, from its start)
    stream_iterator: str | None = None

    def call(self, function: str, e: dict[str, Any], *, remaining_ms: int = 900_000) -> dict[str, Any]:
        with self.recorder.running(function):
            answer: dict[str, Any] = self.handlers[function](
                e, LambdaContext(f"riverbeam-{function}", remaining_ms / 1000)
            )
        return answer

    @property
    def calls(self) -> set[Call]:
        """The AWS calls the functions made so far, as IAM authorizes them."""
        return self.recorder.calls

    def connect(
        self, session_id: str, user_id: str, connection_id: str | None = None
    ) -> tuple[str, dict[str, Any]]:
        connection_id = connection_id or f"conn-{uuid.uuid4().hex[:12]}="
        answer = self.call(
            "connections",
            ws_event(
                "connections/connect", connection_id=connection_id, session_id=session_id, user_id=user_id
            ),
        )
        return connection_id, answer

    def receive(self, limit: int = 10) -> list[dict[str, Any]]:
        """What the event source mapping takes from the queue: up to `limit` messages as Lambda records
        (with their message attributes, as Lambda hands them on)."""
        got = self.sqs.receive_message(
            QueueUrl=self.queue_url,
            MaxNumberOfMessages=limit,
            AttributeNames=["All"],
            MessageAttributeNames=["All"],
            WaitTimeSeconds=0,
        ).get("Messages", [])
        queue_arn = f"arn:aws:sqs:{REGION}:{ACCOUNT}:{self.queue_url.rsplit('/', 1)[-1]}"
        return [sqs_record(m, queue_arn) for m in got]

    def run_worker(self, records: list[dict[str, Any]]) -> list[str]:
        """Call the worker with `records`, then do as the event source mapping does: delete the messages
        that succeeded, leave the failed ones to be delivered again. Returns the failed message ids."""
        answer = self.call("worker", {"Records": records})
        failed = [f["itemIdentifier"] for f in answer["batchItemFailures"]]
        for r in records:
            if r["messageId"] not in failed:
                self.sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=r["receiptHandle"])
        return failed

    def drain(self, max_batches: int = 20) -> list[str]:
        """Deliver until the queue is empty (bounded); returns every failed message id."""
        failed: list[str] = []
        for _ in range(max_batches):
            records = self.receive()
            if not records:
                return failed
            failed += self.run_worker(records)
        raise AssertionError(f"the queue was not empty after {max_batches} batches")

    def stream_records(self) -> list[dict[str, Any]]:
        """The table's stream records written since the last read, as the events function's event source
        mapping hands them on: the template's filter applied, shaped as Lambda's records."""
        # moto serves the streams' regional endpoint, not the account's one botocore picks for an ARN
        regional = Config(account_id_endpoint_mode="disabled")
        streams = boto3.client("dynamodbstreams", region_name=REGION, config=regional)
        arn = boto3.client("dynamodb", region_name=REGION).describe_table(TableName=self.table_name)["Table"][
            "LatestStreamArn"
        ]
        if self.stream_iterator is None:
            (shard,) = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"]
            self.stream_iterator = streams.get_shard_iterator(
                StreamArn=arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
            )["ShardIterator"]
        found: list[dict[str, Any]] = []
        for _ in range(STREAM_READS):
            answer = streams.get_records(ShardIterator=self.stream_iterator, Limit=100)
            self.stream_iterator = answer["NextShardIterator"]
            if not answer["Records"]:
                break
            found += [stream_record(r, arn) for r in answer["Records"]]
        pattern = stream_filter()
        return [r for r in found if matches(pattern, r)]

    def publish(self, records: list[dict[str, Any]] | None = None) -> list[str]:
        """Call the events function with `records` (by default the stream's new ones, in batches of the
        template's size); returns the sequence numbers it reported failed."""
        records = self.stream_records() if records is None else records
        failed: list[str] = []
        for start in range(0, len(records), 10):
            answer = self.call("events", {"Records": records[start : start + 10]})
            failed += [f["itemIdentifier"] for f in answer["batchItemFailures"]]
        return failed

    def queued(self, url: str | None = None) -> int:
        attrs = self.sqs.get_queue_attributes(
            QueueUrl=url or self.queue_url,
            AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
        )["Attributes"]
        return int(attrs["ApproximateNumberOfMessages"]) + int(attrs["ApproximateNumberOfMessagesNotVisible"])

    @staticmethod
    def pushed(connection_id: str) -> list[dict[str, Any]]:
        """The frames the management API received for a connection, in order."""
        from moto.apigatewaymanagementapi.models import apigatewaymanagementapi_backends

        # moto keeps the id as it is in the request's path: URL-encoded, as boto3 sends `=` of real ids
        connections = apigatewaymanagementapi_backends[ACCOUNT][REGION].connections
        found = connections.get(urllib.parse.quote(connection_id, safe=""))
        data = found.data.decode() if found is not None else ""
        frames, decoder, at = [], json.JSONDecoder(), 0
        while at < len(data):
            frame, at = decoder.raw_decode(data, at)
            frames.append(frame)
        return frames


def _gone_hook(stack: Stack) -> Callable[..., Any]:
    """A management API whose posts to the stack's `gone` connections fail as API Gateway answers for a
    closed connection: 410 GoneException."""

    def before_call(params: dict[str, Any], **_: Any) -> Any:
        connection_id = urllib.parse.unquote(params["url_path"].rsplit("/", 1)[-1])
        if connection_id not in stack.gone:
            return None
        error = {
            "Error": {"Code": "GoneException", "Message": ""},
            "ResponseMetadata": {"HTTPStatusCode": 410},
        }
        return AWSResponse("", 410, {}, None), error

    return before_call


def deployment_of(stack: Stack, auth_mode: str) -> Any:
    """The transformed template as a deployment with this stack's names and environment
    (tests/support/iam.py)."""
    from tests.support.iam import deployment
    from tests.support.transformed import parameters, transformed

    overrides = {"ApprovalEventBus": os.environ["EVENT_BUS_NAME"]}
    if os.environ.get("RIVERBEAM_GIT_SECRET"):
        overrides["GitCredentialsSecret"] = os.environ["RIVERBEAM_GIT_SECRET"]
    if os.environ.get("SLACK_BOT_TOKEN_SECRET"):  # the Slack functions' deployment (test_slack_deployed.py)
        overrides["SlackBotTokenSecret"] = os.environ["SLACK_BOT_TOKEN_SECRET"]
        overrides["SlackSigningSecret"] = os.environ["SLACK_SIGNING_SECRET_SECRET"]
    if os.environ.get("MAIL_KEY_SECRET"):  # the mail functions' deployment (test_mail_deployed.py)
        overrides["MailFrom"] = os.environ["MAIL_FROM"]
        overrides["MailKeySecret"] = os.environ["MAIL_KEY_SECRET"]
    names = {
        "Table": stack.table_name,
        "JobQueue": stack.queue_url.rsplit("/", 1)[-1],
        "DeadLetterQueue": stack.dead_letter_url.rsplit("/", 1)[-1],
        "ContentBucket": os.environ.get("CONTENT_BUCKET") or "riverbeam-content",
        "WebSocketApi": WEBSOCKET_ENDPOINT.split("//", 1)[1].split(".", 1)[0],
    }
    # the transform leaves the roles' Refs to parameters as they are: one transform serves every value
    return deployment(transformed(auth_mode), parameters(auth_mode, **overrides), **names)


def refused_calls(stack: Stack, auth_mode: str) -> list[str]:
    """The calls the functions made that their roles do not allow (AccessDenied in AWS, nowhere else)."""
    from tests.support.iam import allowed, role_of

    deployed = deployment_of(stack, auth_mode)
    return [
        f"{c.function}: {c.action} on {c.resource}"
        for c in sorted(stack.calls)
        if not allowed(deployed.statements(role_of(c.function)), c)
    ]


@contextmanager
def lambda_stack(data_dir: Path, *, auth_mode: str = "none", **env: str) -> Iterator[Stack]:
    """The template's table and queues on moto, the handlers loaded, the functions' environment set."""
    saved = dict(os.environ)
    with mock_aws(), serialized_moto(), recording() as recorder:
        dynamodb = boto3.client("dynamodb", region_name=REGION)
        table_name = f"riverbeam-{uuid.uuid4().hex[:8]}"
        dynamodb.create_table(TableName=table_name, **table_definition())
        (table,) = resources_of("AWS::DynamoDB::Table").values()
        dynamodb.update_time_to_live(
            TableName=table_name, TimeToLiveSpecification=table["Properties"]["TimeToLiveSpecification"]
        )
        sqs = boto3.client("sqs", region_name=REGION)
        queues = resources_of("AWS::SQS::Queue")
        (main,) = [q["Properties"] for q in queues.values() if "RedrivePolicy" in q["Properties"]]
        dead_name = str(main["RedrivePolicy"]["deadLetterTargetArn"]["Fn::GetAtt"]).split(".")[0]
        dead = queues[dead_name]["Properties"]
        fifo = {
            "FifoQueue": "true",
            "ContentBasedDeduplication": str(main["ContentBasedDeduplication"]).lower(),
            "MaximumMessageSize": str(main["MaximumMessageSize"]),
        }
        dlq_url = sqs.create_queue(
            QueueName="riverbeam-dead.fifo",
            Attributes={"FifoQueue": "true", "MaximumMessageSize": str(dead["MaximumMessageSize"])},
        )["QueueUrl"]
        dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"][
            "QueueArn"
        ]
        redrive = {
            "deadLetterTargetArn": dlq_arn,
            "maxReceiveCount": main["RedrivePolicy"]["maxReceiveCount"],
        }
        queue_url = sqs.create_queue(
            QueueName="riverbeam-jobs.fifo",
            # visible again at once: the tests deliver a failed message again without waiting
            Attributes={**fifo, "VisibilityTimeout": "0", "RedrivePolicy": json.dumps(redrive)},
        )["QueueUrl"]
        assert dead.get("FifoQueue") in (True, "true")
        if "EVENT_BUS_NAME" not in env:  # a deployment always has one (the template's ApprovalBus)
            env["EVENT_BUS_NAME"] = "riverbeam-approvals"
            boto3.client("events", region_name=REGION).create_event_bus(Name=env["EVENT_BUS_NAME"])
        os.environ.update(
            TABLE_NAME=table_name,
            QUEUE_URL=queue_url,
            AUTH_MODE=auth_mode,
            WEBSOCKET_ENDPOINT=WEBSOCKET_ENDPOINT,
            RIVERBEAM_DATA_DIR=str(data_dir),
            POWERTOOLS_SERVICE_NAME="riverbeam",
            POWERTOOLS_METRICS_NAMESPACE="Riverbeam",
            **env,
        )
        runtime.reset()
        try:
            handlers = {name: function_handler(name) for name in FUNCTIONS}
            stack = Stack(table_name, queue_url, dlq_url, handlers, sqs, recorder)
            runtime.management_api().meta.events.register(
                "before-call.apigatewaymanagementapi.PostToConnection", _gone_hook(stack)
            )
            yield stack
            # every AWS call the test made the functions make is one their roles in template.yaml allow
            refused = refused_calls(stack, auth_mode) if stack.calls else []
            assert not refused, "calls the template's roles do not allow:\n" + "\n".join(refused)
        finally:
            runtime.reset()
            os.environ.clear()
            os.environ.update(saved)

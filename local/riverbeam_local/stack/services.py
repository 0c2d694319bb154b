"""The stack's DynamoDB table (with its stream), SQS queues and EventBridge bus: on the embedded server
(moto's app in a thread of the embedded services' process, aws_process, one request at a time, as
beam_store.embedded serves it, behind the stack's door: aws_door) or wherever AWS_ENDPOINT_URL_DYNAMODB /
AWS_ENDPOINT_URL_SQS / AWS_ENDPOINT_URL_EVENTBRIDGE point; created from the template's definitions where
missing."""

from __future__ import annotations

import json
import logging
import threading
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import boto3
from beam_store.dynamo.table import add_missing_indexes, add_missing_stream
from beam_store.embedded import no_browsers, prepare_moto
from botocore.exceptions import ClientError

from .aws_door import signed_only
from .aws_key import StackKey
from .template import Template

log = logging.getLogger("riverbeam_local")
# requests that change nothing worth a snapshot (ReceiveMessage counts receives, which a restart forgets)
_READS = (
    "GetItem",
    "BatchGetItem",
    "Query",
    "Scan",
    "DescribeTable",
    "TransactGetItems",
    "ReceiveMessage",
    # the table's stream
    "DescribeStream",
    "GetShardIterator",
    "GetRecords",
)
_SENDS = ("AmazonSQS.SendMessage", "AmazonSQS.SendMessageBatch")
WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class EmbeddedAws:
    """moto's DynamoDB (and its streams), SQS, S3 and EventBridge on 127.0.0.1, answering only requests
    signed with `key` and no web page. `lock` is held around each request so that a snapshot taken under it
    never sees half of one; `on_change` follows every request that may write, `on_send` every message sent
    (it wakes the queue poller); a refused request is neither."""

    def __init__(self, key: StackKey, on_change: Callable[[], None], on_send: Callable[[], None]) -> None:
        from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
        from werkzeug.serving import make_server

        logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no line per request
        prepare_moto()
        app: WSGIApp = DomainDispatcherApplication(create_backend_app)
        self.server = make_server("127.0.0.1", 0, app, threaded=False)
        self.lock = threading.Lock()
        self.requests: Counter[str] = Counter()  # by operation: what a session of the stack cost

        def locked(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
            target = str(environ.get("HTTP_X_AMZ_TARGET", ""))
            self.requests[target.rsplit(".", 1)[-1] or f"S3 {environ.get('REQUEST_METHOD')}"] += 1
            with self.lock:
                answer = list(app(environ, start_response))
            if not target.endswith(_READS):
                on_change()
            if target in _SENDS:
                on_send()
            return answer

        # outermost the pages' check (it answers a page with no CORS), then the key's
        self.server.app = no_browsers(signed_only(locked, key), self.server.server_port)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self._thread = threading.Thread(target=self.server.serve_forever, name="embedded-aws", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def requests_line(self) -> str:
        """The requests answered, by operation, most first (bench/load.py reads it)."""
        counts = ", ".join(f"{name} {count}" for name, count in self.requests.most_common())
        return f"the embedded AWS services answered {self.requests.total()} requests: {counts}"[:500]


@dataclass(frozen=True)
class Queues:
    url: str
    arn: str
    dead_letter_url: str


def ensure_table(dynamodb: Any, name: str, template: Template) -> None:
    try:
        described = dynamodb.describe_table(TableName=name)
        # a data dir made before an index was added to the template gets it now, and its stream
        add_missing_indexes(dynamodb, name, template.table_definition, described["Table"])
        add_missing_stream(dynamodb, name, template.table_definition, described["Table"])
        return
    except dynamodb.exceptions.ResourceNotFoundException:
        pass
    log.info("creating table %s", name)
    dynamodb.create_table(TableName=name, **template.table_definition)
    dynamodb.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 1, "MaxAttempts": 120})
    if template.ttl_attribute:
        try:
            dynamodb.update_time_to_live(
                TableName=name,
                TimeToLiveSpecification={"AttributeName": template.ttl_attribute, "Enabled": True},
            )
        except ClientError as error:  # some DynamoDB-compatible servers have no TTL: records just stay
            log.warning("table %s: no TTL (%s)", name, error.response.get("Error", {}).get("Code"))


def stream_arn(dynamodb: Any, name: str) -> str | None:
    """The table's stream (None where it has none: a DynamoDB-compatible server without streams)."""
    arn: str | None = dynamodb.describe_table(TableName=name)["Table"].get("LatestStreamArn")
    return arn


def ensure_bus(events: Any, name: str) -> None:
    """The approval events' bus on the embedded server."""
    try:
        events.create_event_bus(Name=name)
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") != "ResourceAlreadyExistsException":
            raise


def ensure_queues(sqs: Any, prefix: str, template: Template) -> Queues:
    """The job queue and its dead-letter queue, with the template's settings (create_queue is idempotent
    for equal attributes)."""
    spec = template.queue
    suffix = ".fifo" if spec.fifo else ""
    fifo = {"FifoQueue": "true"} if spec.fifo else {}
    dead_url = sqs.create_queue(QueueName=f"{prefix}-dead{suffix}", Attributes=fifo)["QueueUrl"]
    dead_arn = sqs.get_queue_attributes(QueueUrl=dead_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    redrive = {"deadLetterTargetArn": dead_arn, "maxReceiveCount": spec.max_receive_count}
    attributes = {
        **fifo,
        "VisibilityTimeout": str(spec.visibility_timeout),
        "RedrivePolicy": json.dumps(redrive),
    }
    if spec.fifo:
        attributes["ContentBasedDeduplication"] = str(spec.content_based_deduplication).lower()
    url = sqs.create_queue(QueueName=f"{prefix}-jobs{suffix}", Attributes=attributes)["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    return Queues(url, arn, dead_url)


def clients() -> tuple[Any, Any]:
    """DynamoDB and SQS clients with boto3's usual settings (the endpoint variables included)."""
    return boto3.client("dynamodb"), boto3.client("sqs")


def ensure_bucket(s3: Any, name: str) -> None:
    """The content bucket (large content the store keeps in S3) on the embedded server, where missing."""
    try:
        s3.head_bucket(Bucket=name)
    except ClientError:
        log.info("creating bucket %s", name)
        s3.create_bucket(Bucket=name)

"""Where the stack's AWS services are (embedded, in a process of their own, or at the AWS_ENDPOINT_URL_*
given), and what the stack makes on them before it serves: the table, the queues, the content bucket and the
bus, with the last run's snapshot restored into the embedded ones."""

from __future__ import annotations

import contextlib
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3

from . import services as aws
from . import snapshot
from .aws_key import StackKey, sign_requests_to
from .aws_process import AwsProcess
from .template import Template

RESOURCE_PREFIX = "riverbeam-local"
# the services the stack embeds unless an endpoint variable names another server
EMBEDDABLE = ("DYNAMODB", "SQS", "S3", "EVENTBRIDGE")


@dataclass
class LocalAws:
    """The services' whereabouts: which are embedded (and the server holding them), the names the
    functions are given, and the endpoints the stack prints when ready."""

    embedded: AwsProcess | None
    embedded_services: list[str]
    table_name: str
    bus_name: str
    content_bucket: str
    endpoints: dict[str, str] = field(default_factory=dict)

    def embeds(self, service: str) -> bool:
        return service in self.embedded_services


def _embedded_services() -> list[str]:
    # a bus of the developer's (EVENT_BUS_NAME, with AWS_ENDPOINT_URL_EVENTBRIDGE or AWS's) is used as it is
    own_bus = bool(os.environ.get("EVENT_BUS_NAME") or os.environ.get("AWS_ENDPOINT_URL_EVENTBRIDGE"))
    return [
        s
        for s in EMBEDDABLE
        if not os.environ.get(f"AWS_ENDPOINT_URL_{s}") and not (s == "EVENTBRIDGE" and own_bus)
    ]


def _endpoints(local: LocalAws) -> dict[str, str]:
    def where(service: str) -> str:
        url = os.environ.get(f"AWS_ENDPOINT_URL_{service}", "AWS")
        return url + (" (embedded)" if local.embeds(service) else "")

    return {
        "DynamoDB": where("DYNAMODB"),
        "SQS": where("SQS"),
        "EventBridge": f"{where('EVENTBRIDGE')}, bus {local.bus_name}",
        "S3": f"{where('S3')}, bucket {local.content_bucket}",
    }


def start_services(
    stack: contextlib.ExitStack,
    key: StackKey,
    data_dir: Path,
    written: threading.Event,
    sent: threading.Event,
) -> LocalAws:
    """The embedded server started in a process of its own (stopped by `stack`) for the services no endpoint
    variable names, answering only requests signed with `key`, this process's boto3 clients signing theirs
    to it with `key`, and the endpoint variables set to it. `written` is set after each request that may
    write (the stream's tail waits on it), `sent` after each message sent (the queue poller). Raises
    OSError when the embedded server does not start."""
    embedded_services = _embedded_services()
    embedded = None
    if embedded_services:
        embedded = AwsProcess(key, data_dir, on_change=written.set, on_send=sent.set)
        stack.callback(embedded.stop)
        sign_requests_to(embedded.url, key)
        for service in embedded_services:
            os.environ[f"AWS_ENDPOINT_URL_{service}"] = embedded.url
    # the table's stream is served where the table is
    os.environ.setdefault("AWS_ENDPOINT_URL_DYNAMODB_STREAMS", os.environ["AWS_ENDPOINT_URL_DYNAMODB"])
    local = LocalAws(
        embedded,
        embedded_services,
        table_name=os.environ.get("RIVERBEAM_TABLE_NAME", RESOURCE_PREFIX),
        bus_name=os.environ.get("EVENT_BUS_NAME") or f"{RESOURCE_PREFIX}-approvals",
        content_bucket=os.environ.get("CONTENT_BUCKET") or f"{RESOURCE_PREFIX}-content",
    )
    local.endpoints = _endpoints(local)
    return local


def create_resources(
    local: LocalAws, template: Template, saved: dict[str, Any] | None, data_dir: Path
) -> tuple[Any, Any, aws.Queues]:
    """The table, queues, bucket and bus where missing, and the snapshot `saved` restored into the embedded
    ones; returns the DynamoDB and SQS clients and the queues. Raises what boto3 raises."""
    dynamodb, sqs = aws.clients()
    aws.ensure_table(dynamodb, local.table_name, template)
    queues = aws.ensure_queues(sqs, RESOURCE_PREFIX, template)
    if local.embeds("S3"):
        s3 = boto3.client("s3")
        aws.ensure_bucket(s3, local.content_bucket)
        snapshot.restore_objects(data_dir / snapshot.CONTENT_DIR, s3, local.content_bucket)
    if local.embeds("EVENTBRIDGE"):
        aws.ensure_bus(boto3.client("events"), local.bus_name)
    if saved is not None and local.embedded is not None:
        urls = {"jobs": queues.url, "dead": queues.dead_letter_url} if local.embeds("SQS") else {}
        if not local.embeds("DYNAMODB"):
            saved["items"] = []
        snapshot.restore(saved, dynamodb, sqs, local.table_name, urls)
    return dynamodb, sqs, queues


def aws_env_file(local: LocalAws, key: StackKey, data_dir: Path) -> Path | None:
    """The embedded services' environment file for the user's scripts (None: nothing is embedded)."""
    from .aws_key import write_env_file

    if local.embedded is None:
        return None
    region = boto3.Session().region_name or "us-east-1"
    return write_env_file(data_dir, key, region, local.embedded.url, local.embedded_services)

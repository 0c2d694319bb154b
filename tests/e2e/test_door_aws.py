"""The embedded AWS endpoints behind the stack's door, end to end: `riverbeam dev` as a child process, then
what another local process could try on its embedded DynamoDB, SQS, S3 and EventBridge (boto3 with other
credentials, raw HTTP with no signature or a made-up one, moto's management routes), and what the user's own
script can do with the environment file the stack prints."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from riverbeam_local.clients.dev_process import DevProcess, running

from tests.support.devstack import TIMEOUT_SECONDS, aws_env, http

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

USER = "aws-door-user"
TABLE = "riverbeam-local"
BUCKET = "riverbeam-local-content"
BUS = "riverbeam-local-approvals"
QUEUE = "riverbeam-local-jobs.fifo"
REGION = "us-east-1"
# what any process of this machine may have: credentials of its own (or moto's usual ones)
OTHER_CREDENTIALS = {"aws_access_key_id": "local", "aws_secret_access_key": "local"}


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevProcess]:
    env = {"RIVERBEAM_DEV_SECRET": "", "AWS_DEFAULT_REGION": REGION, "AWS_REGION": REGION}
    with running(tmp_path_factory.mktemp("aws-door"), env=env) as process:
        yield process


def embedded_url(dev: DevProcess) -> str:
    return dev.urls["DynamoDB"].removesuffix(" (embedded)")


def other_client(dev: DevProcess, service: str) -> Any:
    """boto3 as another local process would use it: the embedded endpoint, credentials not the stack's."""
    return boto3.client(service, endpoint_url=embedded_url(dev), region_name=REGION, **OTHER_CREDENTIALS)


def env_file(dev: DevProcess) -> Path:
    """The file the banner names for the user's own scripts."""
    return Path(dev.urls["AWS env file"].split(" ", 1)[0])


def user_client(dev: DevProcess, service: str) -> Any:
    """boto3 as the user's own script makes it after sourcing the env file: no argument but the service."""
    found = aws_env(dev)
    session = boto3.Session(
        aws_access_key_id=found["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=found["AWS_SECRET_ACCESS_KEY"],
        region_name=found["AWS_REGION"],
    )
    variable = "AWS_ENDPOINT_URL_" + {"events": "EVENTBRIDGE"}.get(service, service.upper())
    return session.client(service, endpoint_url=found[variable])


def raw(
    dev: DevProcess, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None
) -> tuple[int, bytes]:
    request = urllib.request.Request(
        embedded_url(dev) + path, data=body, method=method, headers=headers or {}
    )
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def error_code(error: pytest.ExceptionInfo[ClientError]) -> str:
    return str(error.value.response["Error"]["Code"])


def session_exists(dev: DevProcess, session_id: str) -> bool:
    status, body = http(dev, "GET", f"/sessions/{session_id}?user_id={USER}")
    assert status in (200, 404), body
    return status == 200


def invoke_body(session_id: str) -> dict[str, Any]:
    """An invoke request: the body of POST /invoke, and a queue message from any producer."""
    return {
        "agent_name": "author",
        "session_id": session_id,
        "content": [{"type": "text", "text": "Hello"}],
        "auth_context": {"user_id": USER},
    }


def invoked(dev: DevProcess) -> str:
    """A new session of USER's, made through the stack's HTTP API; its id."""
    session_id = str(uuid.uuid4())
    status, result = http(dev, "POST", "/invoke", invoke_body(session_id))
    assert status == 200, result
    return session_id


def send_job(sqs: Any, session_id: str) -> None:
    url = sqs.get_queue_url(QueueName=QUEUE)["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody=json.dumps(invoke_body(session_id)), MessageGroupId=session_id)


def wait_for_session(dev: DevProcess, session_id: str) -> None:
    deadline = time.monotonic() + TIMEOUT_SECONDS
    while not session_exists(dev, session_id):
        assert time.monotonic() < deadline, f"the job of {session_id} never ran"
        time.sleep(0.2)


def an_event(detail: str) -> dict[str, Any]:
    return {"EventBusName": BUS, "Source": "riverbeam", "DetailType": "action.decided", "Detail": detail}


# ---------------------------------------------------------------------------- other credentials


def test_a_client_with_other_credentials_reads_and_writes_nothing(dev: DevProcess) -> None:
    session_id = invoked(dev)
    dynamodb = other_client(dev, "dynamodb")
    with pytest.raises(ClientError) as scanned:
        dynamodb.scan(TableName=TABLE)
    assert error_code(scanned) == "UnrecognizedClientException"
    with pytest.raises(ClientError) as listed:
        dynamodb.list_tables()
    assert error_code(listed) == "UnrecognizedClientException"

    s3 = other_client(dev, "s3")
    key = f"door/{uuid.uuid4()}"
    user_client(dev, "s3").put_object(Bucket=BUCKET, Key=key, Body=b"the user's content")
    with pytest.raises(ClientError) as objects:
        s3.list_objects_v2(Bucket=BUCKET)
    assert error_code(objects) == "InvalidAccessKeyId"
    with pytest.raises(ClientError) as got:
        s3.get_object(Bucket=BUCKET, Key=key)
    assert error_code(got) == "InvalidAccessKeyId"

    with pytest.raises(ClientError) as put:
        other_client(dev, "events").put_events(Entries=[an_event('{"forged": true}')])
    assert error_code(put) == "UnrecognizedClientException"

    # a job queued as any user: refused, and the worker never runs it (a job queued after it by the
    # user's own script runs, so the queue has been read past where the forged one would be)
    forged, later = str(uuid.uuid4()), str(uuid.uuid4())
    with pytest.raises(ClientError) as sent:
        send_job(other_client(dev, "sqs"), forged)
    assert error_code(sent) == "UnrecognizedClientException"
    send_job(user_client(dev, "sqs"), later)
    wait_for_session(dev, later)
    assert not session_exists(dev, forged)
    assert session_exists(dev, session_id)


def test_a_wrong_secret_key_for_the_stacks_key_id_is_a_bad_signature(dev: DevProcess) -> None:
    found = aws_env(dev)
    forged = boto3.client(
        "dynamodb",
        endpoint_url=embedded_url(dev),
        region_name=REGION,
        aws_access_key_id=found["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key="not-the-stacks-secret-access-key-0123456",
    )
    with pytest.raises(ClientError) as scanned:
        forged.scan(TableName=TABLE)
    assert error_code(scanned) == "InvalidSignatureException"


# ---------------------------------------------------------------------------- raw HTTP


SCAN = json.dumps({"TableName": TABLE}).encode()
JSON_SCAN = {"content-type": "application/x-amz-json-1.0", "x-amz-target": "DynamoDB_20120810.Scan"}
FORM = {"content-type": "application/x-www-form-urlencoded"}
MADE_UP = (
    "AWS4-HMAC-SHA256 Credential=x/20260101/us-east-1/{service}/aws4_request, SignedHeaders=host, Signature=0"
)


@pytest.mark.parametrize(
    ("method", "path", "body", "headers", "refused"),
    [
        ("POST", "/", SCAN, JSON_SCAN, (400, "MissingAuthenticationTokenException")),
        (
            "POST",
            "/",
            SCAN,
            {**JSON_SCAN, "authorization": MADE_UP.format(service="dynamodb")},
            (400, "UnrecognizedClientException"),
        ),
        ("GET", f"/{BUCKET}", None, {}, (403, "AccessDenied")),
        (
            "GET",
            f"/{BUCKET}?list-type=2",
            None,
            {"authorization": MADE_UP.format(service="s3")},
            (403, "InvalidAccessKeyId"),
        ),
        ("GET", "/", None, {}, (403, "AccessDenied")),
        ("POST", "/", b"Action=ListQueues&Version=2012-11-05", FORM, (403, "AccessDenied")),
    ],
    ids=["scan-unsigned", "scan-made-up", "s3-list-unsigned", "s3-list-made-up", "s3-buckets", "sqs-query"],
)
def test_raw_http_without_the_stacks_signature_is_refused(
    dev: DevProcess,
    method: str,
    path: str,
    body: bytes | None,
    headers: dict[str, str],
    refused: tuple[int, str],
) -> None:
    invoked(dev)
    status, answer = raw(dev, method, path, body, headers)
    for leaked in (b"Items", b"Contents", b"riverbeam-local", b"QueueUrl", USER.encode(), b"Traceback"):
        assert leaked not in answer, answer
    expected_status, code = refused
    assert status == expected_status, (status, answer)
    if status == 400:  # a JSON protocol's error
        assert json.loads(answer)["__type"] == code, answer
    else:  # S3's, or the query protocol's
        assert f"<Code>{code}</Code>".encode() in answer, answer


# ---------------------------------------------------------------------------- moto's own routes


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/moto-api/reset"),
        ("GET", "/moto-api/data.json"),
        ("GET", "/moto-api/"),
        ("POST", "/moto-api/reset-auth"),
        ("GET", "/latest/meta-data/"),
    ],
)
def test_motos_management_routes_are_closed_and_reset_erases_nothing(
    dev: DevProcess, method: str, path: str
) -> None:
    session_id = invoked(dev)
    status, answer = raw(dev, method, path, b"" if method == "POST" else None)
    assert status == 404, (status, answer)
    assert b"riverbeam-local" not in answer and USER.encode() not in answer, answer
    assert session_exists(dev, session_id)


# ---------------------------------------------------------------------------- the user's own script


USER_SCRIPT = """
import json, boto3
items = boto3.client("dynamodb").scan(TableName="riverbeam-local")["Items"]
listed = boto3.client("s3").list_objects_v2(Bucket="riverbeam-local-content")
queue = boto3.client("sqs").get_queue_url(QueueName="riverbeam-local-jobs.fifo")["QueueUrl"]
entry = {"EventBusName": "riverbeam-local-approvals", "Source": "me", "DetailType": "t", "Detail": "{}"}
events = boto3.client("events").put_events(Entries=[entry])
print(json.dumps({"keys": sorted(i["pk"]["S"] for i in items), "queue": queue,
    "failed": events["FailedEntryCount"], "objects": listed["KeyCount"]}))
"""


def test_the_users_script_reaches_the_embedded_endpoints_with_the_env_file(dev: DevProcess) -> None:
    session_id = invoked(dev)
    path = env_file(dev)
    assert path.parent == dev.data_dir and stat.S_IMODE(path.stat().st_mode) == 0o600
    found = aws_env(dev)
    # the banner names the file, never the secret access key it holds
    banner = "".join(dev.stdout)
    assert (
        found["AWS_SECRET_ACCESS_KEY"] not in banner
        and found["AWS_SECRET_ACCESS_KEY"] not in dev.stderr_text()
    )
    assert found["AWS_ENDPOINT_URL_DYNAMODB"] == embedded_url(dev)
    # a clean environment but the file: what a person's shell has after `. <file>`
    done = subprocess.run(
        ["bash", "-c", '. "$1" && exec "$2" -c "$3"', "bash", str(path), sys.executable, USER_SCRIPT],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp")},
    )
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert f"SESSION#{session_id}" in answer["keys"] and answer["failed"] == 0, answer
    assert answer["queue"].endswith("/" + QUEUE), answer

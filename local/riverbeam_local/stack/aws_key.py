"""The stack's AWS key: an access key id and secret access key derived from the stack's secret (HMAC-SHA256),
the only credentials its embedded AWS endpoints accept. The stack's own boto3 clients sign their requests to
those endpoints with it; a user's script gets it from `<data dir>/aws.env` (0600), which the banner names.

Derived, not random: the same secret gives the same key after a restart (a script that exported it keeps
working), and nothing more than the secret has to be kept."""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import shlex
import tempfile
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from botocore.credentials import Credentials

ENV_FILE = "aws.env"
FILE_MODE = 0o600
# the labels make the two halves independent of each other and of any other use of the secret
_KEY_ID_LABEL = b"riverbeam-local aws access key id"
_SECRET_KEY_LABEL = b"riverbeam-local aws secret access key"
# the endpoint variables a script needs for each embedded service (boto3 and the AWS CLI read them)
_VARIABLES = {
    "DYNAMODB": ("AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_DYNAMODB_STREAMS"),
    "SQS": ("AWS_ENDPOINT_URL_SQS",),
    "S3": ("AWS_ENDPOINT_URL_S3",),
    "EVENTBRIDGE": ("AWS_ENDPOINT_URL_EVENTBRIDGE",),
}


@dataclass(frozen=True)
class StackKey:
    access_key_id: str
    secret_access_key: str

    def credentials(self) -> Credentials:
        return Credentials(self.access_key_id, self.secret_access_key)


def stack_key(secret: str) -> StackKey:
    """The AWS key of a stack whose secret is `secret`: shaped as AWS's (20 and 40 characters)."""

    def derived(label: bytes) -> bytes:
        return hmac.new(secret.encode(), label, hashlib.sha256).digest()

    key_id = "RBLK" + base64.b32encode(derived(_KEY_ID_LABEL)[:10]).decode()
    secret_key = base64.b64encode(derived(_SECRET_KEY_LABEL)[:30]).decode()
    return StackKey(key_id, secret_key)


def sign_requests_to(url: str, key: StackKey) -> None:
    """Every boto3 client this process makes from now on (through `boto3.client`, as the handlers, the
    poller, the stream's tail and the snapshots do) signs its requests to `url` with `key`; its requests
    anywhere else (Bedrock, a DynamoDB of the user's, the management API) keep the credentials boto3 finds.
    botocore takes a request's own credentials from its signing context (`request_credentials`)."""
    import boto3

    where = urllib.parse.urlsplit(url).netloc
    credentials = key.credentials()

    def with_stack_key(request: Any, **_: Any) -> None:
        if urllib.parse.urlsplit(request.url).netloc == where:
            request.context.setdefault("signing", {})["request_credentials"] = credentials

    if boto3.DEFAULT_SESSION is None:
        boto3.setup_default_session()
    assert boto3.DEFAULT_SESSION is not None  # made just above
    boto3.DEFAULT_SESSION.events.register(
        "before-sign", with_stack_key, unique_id=f"riverbeam-stack-key-{where}"
    )


def write_env_file(data_dir: Path, key: StackKey, region: str, url: str, services: list[str]) -> Path:
    """`<data dir>/aws.env`, readable by its owner alone: what a script exports to reach the embedded
    `services` at `url` (`. aws.env`). Rewritten on each start: the embedded server's port changes."""
    lines = [
        "# riverbeam dev: the embedded AWS endpoints of the stack on this data dir, for your own scripts:",
        "#   . ./aws.env && aws dynamodb scan --table-name riverbeam-local",
        "# They accept only requests signed with this key (derived from the stack's secret).",
        f"export AWS_ACCESS_KEY_ID={shlex.quote(key.access_key_id)}",
        f"export AWS_SECRET_ACCESS_KEY={shlex.quote(key.secret_access_key)}",
        "unset AWS_SESSION_TOKEN AWS_PROFILE",
        f"export AWS_REGION={shlex.quote(region)} AWS_DEFAULT_REGION={shlex.quote(region)}",
        *(
            f"export {variable}={shlex.quote(url)}"
            for service in services
            for variable in _VARIABLES.get(service, ())
        ),
    ]
    path = data_dir / ENV_FILE
    descriptor, draft = tempfile.mkstemp(dir=data_dir, prefix=".aws-env-")  # mkstemp makes it 0600
    try:
        with os.fdopen(descriptor, "w") as file:
            file.write("\n".join(lines) + "\n")
        os.chmod(draft, FILE_MODE)
        os.replace(draft, path)  # whole or not at all; a link someone put there is replaced, not followed
    except BaseException:
        os.unlink(draft)
        raise
    return path

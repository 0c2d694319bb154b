"""The AWS calls the functions make, recorded as IAM authorizes them: while a handler of the test deployment
(tests/support/lambda_stack.py) runs, every botocore call is kept as the function that made it, the IAM
action and the resource ARN it is authorized on (with the request's condition keys where a grant uses them).
tests/support/iam.py evaluates them against each function's role in the transformed template."""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import boto3

REGION = "us-east-1"
ACCOUNT = "123456789012"

# IAM authorizes a TransactWriteItems item by item, each as the single-item action of its kind
_TRANSACTED = {
    "Put": "dynamodb:PutItem",
    "Update": "dynamodb:UpdateItem",
    "Delete": "dynamodb:DeleteItem",
    "ConditionCheck": "dynamodb:ConditionCheckItem",
    "Get": "dynamodb:GetItem",
}
# Bedrock's cross-Region inference profiles: an id that starts with one of these is a profile's
PROFILE_PREFIXES = ("us.", "eu.", "apac.", "global.", "us-gov.", "jp.", "au.", "ca.")
# the operations Bedrock authorizes as another action
_BEDROCK = {"ConverseStream": "InvokeModelWithResponseStream", "Converse": "InvokeModel"}
# the management API's operations, by the HTTP method of their @connections/{id} resource
_MANAGEMENT_METHODS = {"PostToConnection": "POST", "GetConnection": "GET", "DeleteConnection": "DELETE"}


@dataclass(frozen=True, order=True)
class Call:
    """One authorization a call needs: `function` (functions/<name>) asks `action` on `resource`."""

    function: str
    action: str
    resource: str
    # request context keys a grant's Condition may test (bedrock:InferenceProfileArn)
    context: tuple[tuple[str, str], ...] = ()


def _table(name: str) -> str:
    return name if name.startswith("arn:") else f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{name}"


def _dynamodb(operation: str, params: dict[str, Any]) -> list[tuple[str, str]]:
    if operation == "TransactWriteItems" or operation == "TransactGetItems":
        return [
            (_TRANSACTED[kind], _table(body["TableName"]))
            for item in params["TransactItems"]
            for kind, body in item.items()
        ]
    if operation in ("BatchWriteItem", "BatchGetItem"):
        return [(f"dynamodb:{operation}", _table(name)) for name in params["RequestItems"]]
    resource = _table(params["TableName"])
    if params.get("IndexName"):
        resource += f"/index/{params['IndexName']}"
    return [(f"dynamodb:{operation}", resource)]


def _s3(operation: str, params: dict[str, Any]) -> list[tuple[str, str]]:
    bucket = f"arn:aws:s3:::{params['Bucket']}"
    if operation in ("GetObject", "HeadObject"):
        # without s3:ListBucket a missing object answers 403 AccessDenied, not 404 NoSuchKey (S3's rule):
        # the store tells a missing object by its 404
        return [("s3:GetObject", f"{bucket}/{params['Key']}"), ("s3:ListBucket", bucket)]
    if operation.startswith("ListObjects"):
        return [("s3:ListBucket", bucket)]
    return [(f"s3:{operation}", f"{bucket}/{params['Key']}")]


def _sqs(operation: str, params: dict[str, Any]) -> list[tuple[str, str]]:
    name = params["QueueUrl"].rstrip("/").rsplit("/", 1)[-1]
    action = "SendMessage" if operation == "SendMessageBatch" else operation
    return [(f"sqs:{action}", f"arn:aws:sqs:{REGION}:{ACCOUNT}:{name}")]


def _events(operation: str, params: dict[str, Any]) -> list[tuple[str, str]]:
    buses = {entry.get("EventBusName") or "default" for entry in params.get("Entries", [])}
    return [
        (
            f"events:{operation}",
            b if b.startswith("arn:") else f"arn:aws:events:{REGION}:{ACCOUNT}:event-bus/{b}",
        )
        for b in sorted(buses)
    ]


def profile_arn(profile: str) -> str:
    return f"arn:aws:bedrock:{REGION}:{ACCOUNT}:inference-profile/{profile}"


def model_arn(model: str, region: str = REGION) -> str:
    return f"arn:aws:bedrock:{region}::foundation-model/{model}"


def bedrock_calls(function: str, operation: str, model_id: str) -> list[Call]:
    """A model call as IAM authorizes it: a plain id on its foundation model; a profile on the profile,
    and on the foundation model in the Region it is routed to (here the function's), with the profile's
    ARN as bedrock:InferenceProfileArn."""
    action = f"bedrock:{_BEDROCK.get(operation, operation)}"
    if model_id.startswith(PROFILE_PREFIXES):
        profile = profile_arn(model_id)
        model = model_id.split(".", 1)[1]
        routed = (("bedrock:InferenceProfileArn", profile),)
        return [Call(function, action, profile), Call(function, action, model_arn(model), routed)]
    return [Call(function, action, model_id if model_id.startswith("arn:") else model_arn(model_id))]


def _management_api(url: str, method: str) -> list[tuple[str, str]]:
    """execute-api:ManageConnections on <api>/<stage>/<METHOD>/@connections/<id>, from the request's URL."""
    parsed = urllib.parse.urlsplit(url)
    api = parsed.hostname.split(".", 1)[0] if parsed.hostname else ""
    path = urllib.parse.unquote(parsed.path).lstrip("/")
    stage, _, rest = path.partition("/")
    return [
        (
            "execute-api:ManageConnections",
            f"arn:aws:execute-api:{REGION}:{ACCOUNT}:{api}/{stage}/{method}/{rest}",
        )
    ]


class Recorder:
    """botocore's hooks on boto3's default session: each call made while `function` is set is kept."""

    def __init__(self) -> None:
        self.function: str | None = None
        self.calls: set[Call] = set()

    def _keep(self, found: list[tuple[str, str]]) -> None:
        if self.function is not None:
            self.calls.update(Call(self.function, action, resource) for action, resource in found)

    def provide_params(self, model: Any, params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        context["recorded_params"] = dict(params)  # the call's own parameters, for before-call
        if self.function is not None and model.service_model.service_name == "apigatewaymanagementapi":
            # here, not before-call: a test's hook may answer there first (a gone connection's 410), and
            # API Gateway authorizes the call before it answers that
            url = f"{os.environ['WEBSOCKET_ENDPOINT']}/@connections/{params['ConnectionId']}"
            self._keep(_management_api(url, _MANAGEMENT_METHODS[model.name]))

    def before_call(self, model: Any, params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        if self.function is None:
            return
        service, operation = model.service_model.service_name, model.name
        api = context.get("recorded_params", {})
        if service == "dynamodb":
            self._keep(_dynamodb(operation, api))
        elif service == "s3":
            self._keep(_s3(operation, api))
        elif service == "sqs":
            self._keep(_sqs(operation, api))
        elif service == "events":
            self._keep(_events(operation, api))
        elif service == "apigatewaymanagementapi":
            return  # recorded with its parameters (provide_params)
        elif service == "sesv2" and self.function is not None:
            # SES authorizes a send on the sender's identity, with the sender as ses:FromAddress
            sender = str(api.get("FromEmailAddress", ""))
            at = f"arn:aws:ses:{REGION}:{ACCOUNT}:identity/{sender}"
            self.calls.add(Call(self.function, f"ses:{operation}", at, (("ses:FromAddress", sender),)))
        elif service == "bedrock-runtime":
            self.calls.update(bedrock_calls(self.function, operation, api["modelId"]))
        elif service != "secretsmanager":  # after the call: the secret's ARN is in the answer
            self._keep([(f"{model.service_model.signing_name}:{operation}", "*")])

    def after_call(self, model: Any, parsed: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        if self.function is None or model.service_model.service_name != "secretsmanager":
            return
        secret = parsed.get("ARN") or context.get("recorded_params", {}).get("SecretId", "")
        if not secret.startswith("arn:"):  # not found: IAM sees the name as this account's secret
            secret = f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:{secret}"
        self._keep([(f"secretsmanager:{model.name}", secret)])

    @contextmanager
    def by_the_test(self) -> Iterator[None]:
        """The calls made inside are the test's own (its reads while a handler is still running in
        another thread), no function's."""
        outer, self.function = self.function, None
        try:
            yield
        finally:
            self.function = outer

    @contextmanager
    def running(self, function: str) -> Iterator[None]:
        """The calls made inside are `function`'s (handlers are called one at a time)."""
        outer, self.function = self.function, function
        try:
            yield
        finally:
            self.function = outer


@contextmanager
def recording() -> Iterator[Recorder]:
    """A Recorder on boto3's default session, for the clients made from now on (a client copies the
    session's hooks when it is made: the test deployment makes its clients after this)."""
    recorder = Recorder()
    events = boto3._get_default_session().events  # type: ignore[attr-defined]
    hooks = (
        ("provide-client-params", recorder.provide_params),
        ("before-call", recorder.before_call),
        ("after-call", recorder.after_call),
    )
    for name, hook in hooks:
        events.register(name, hook)
    try:
        yield recorder
    finally:
        for name, hook in hooks:
            events.unregister(name, hook)

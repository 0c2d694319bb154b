"""Slack in a deployment: the notifier (SlackNotifierFunction, fed by the table's stream as the events
function is: a record whose message Slack does not take fails alone and is delivered again, so Slack down
delays its messages and loses none, and never blocks a run) and the interactivity route (SlackFunction,
`POST /channels/slack`, no JWT: Slack's signature is its door). The work is riverbeam.channels'.

Secrets: SLACK_BOT_TOKEN_SECRET and SLACK_SIGNING_SECRET_SECRET name Secrets Manager secrets (the template's
SlackBotTokenSecret and SlackSigningSecret); RIVERBEAM_SLACK_BOT_TOKEN and RIVERBEAM_SLACK_SIGNING_SECRET
give the values themselves (the local stack). SLACK_API_URL points the Web API client elsewhere."""

from __future__ import annotations

import base64
import functools
import json
import os
from typing import TYPE_CHECKING, Any

import boto3
from aws_lambda_powertools.utilities import parameters
from aws_lambda_powertools.utilities.typing import LambdaContext
from beam_store.dynamo.outbox_items import events_of

from ..agent.config import AgentsFile, load_agents
from ..channels import store_of
from ..errors import BeamError
from ..models import AuthContext
from . import runtime, service

if TYPE_CHECKING:
    from slack_sdk import WebClient
SECRET_SECONDS = 300  # a rotated secret is read again within five minutes
# Slack's 3 seconds: a Web API call from the interactivity route never waits longer than this
SLACK_TIMEOUT = 2


def _secret(name: str) -> str:
    given = os.environ.get(f"RIVERBEAM_{name}")
    if given:
        return given
    secret_id = os.environ.get(f"{name}_SECRET", "")
    if not secret_id:
        raise BeamError("BEM-500", f"neither RIVERBEAM_{name} nor {name}_SECRET is set")
    return str(secrets_provider().get(secret_id, max_age=SECRET_SECONDS))


def prepare() -> None:
    """In Lambda, read agents.yaml at init: every batch and click uses its notify: and people: (a failure is
    logged and left to the first request, as runtime.prepare does)."""
    if "AWS_LAMBDA_FUNCTION_NAME" not in os.environ:
        return
    try:
        agents_file()
    except Exception:
        runtime.logger.exception("init could not read agents.yaml: the first request reads it again")


@functools.cache
def secrets_provider() -> parameters.SecretsProvider:
    """Powertools' cache of secrets, over the default session's client (as the other AWS clients are)."""
    return parameters.SecretsProvider(boto3_client=boto3.client("secretsmanager"))


def reset() -> None:
    """Forget the secrets, the file and the client (tests change the environment between cases)."""
    secrets_provider.cache_clear()
    agents_file.cache_clear()


def enabled() -> bool:
    """Whether Slack is set up here (a bot token, by value or by secret)."""
    return bool(os.environ.get("RIVERBEAM_SLACK_BOT_TOKEN") or os.environ.get("SLACK_BOT_TOKEN_SECRET"))


def client(timeout: int = 10) -> WebClient:
    from slack_sdk import WebClient  # the Slack functions' alone (the mail functions share this module)

    url = os.environ.get("SLACK_API_URL") or WebClient.BASE_URL
    url = url if url.endswith("/") else url + "/"  # the client joins method names onto it
    return WebClient(token=_secret("SLACK_BOT_TOKEN"), base_url=url, timeout=timeout)


@functools.cache
def agents_file() -> AgentsFile:
    """agents.yaml as read once: each tool's `notify:` and the `people:`."""
    return load_agents(runtime.settings().agents_file)


def stream_batch(event: dict[str, Any], handle: Any, context: LambdaContext | None) -> dict[str, Any]:
    """Powertools' partial batch of stream records (its batch utility imported by the notifiers alone)."""
    from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response

    processor = BatchProcessor(event_type=EventType.DynamoDBStreams)
    return dict(process_partial_response(event, handle, processor, context))


def outbox_of(record: Any) -> dict[str, Any] | None:
    from .publisher import outbox_image

    return outbox_image(record)


def _notifier(web: WebClient) -> Any:
    from ..channels import slack_notify

    def notify(record: Any) -> None:
        image = outbox_of(record)
        if image is None:
            return
        for event in events_of(image):
            slack_notify.on_event(store_of(runtime.beam()), web, agents_file(), event.detail)

    return notify


def handle_stream(event: dict[str, Any], context: LambdaContext | None) -> dict[str, Any]:
    """The notifier: a batch of stream records; the answer names those Slack did not take (none, and
    nothing done, where Slack is not set up: the local stack without RIVERBEAM_SLACK_BOT_TOKEN)."""
    if not enabled():
        return {"batchItemFailures": []}
    return stream_batch(event, _notifier(client()), context)


def _answer(status: int, body: dict[str, Any] | None = None) -> dict[str, Any]:
    text = json.dumps(body) if body is not None else ""
    return {"statusCode": status, "headers": {"Content-Type": "application/json"}, "body": text}


def _resume(body: dict[str, Any], caller: AuthContext) -> Any:
    return service.resume(body, lambda _: caller)


def handle_interaction(event: dict[str, Any]) -> dict[str, Any]:
    """POST /channels/slack: 401 for what is not Slack's, else 200 at once (a decision's run is queued)."""
    from ..channels import slack_interact

    raw = event.get("body") or ""
    body = base64.b64decode(raw) if event.get("isBase64Encoded") else raw.encode()
    headers = {k.lower(): v for k, v in (event.get("headers") or {}).items()}
    store = store_of(runtime.beam())
    try:
        slack_interact.check_signature(store, _secret("SLACK_SIGNING_SECRET"), body, headers)
        payload = slack_interact.payload_of(body)
    except BeamError as error:
        runtime.logger.info("slack request refused", extra={"code": error.code})
        return _answer(error.status, error.to_dict())
    people = agents_file().people
    answered = slack_interact.Interaction(store, client(SLACK_TIMEOUT), people, _resume).handle(payload)
    return _answer(200, answered)

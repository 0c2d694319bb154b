"""The Slack functions as deployed, on moto: the notifier fed the table's stream records (the template's
filter applied) posts the message, the interactivity function decides a signed click, and each reads its
secrets from Secrets Manager; every AWS call they made is one their roles allow (the stack's own check,
tests/support/lambda_stack.py), and every grant of their roles is used but those of their event source
mappings and the ones listed here with the reason."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import boto3
from riverbeam.aws import slack as slack_runtime

from tests.support.agents import invoke_body
from tests.support.fake_slack import BOT_TOKEN, SIGNING_SECRET, click, fake_slack, signed
from tests.support.iam import event_source_calls, grant_triples, role_of, used_triples
from tests.support.lambda_stack import deployment_of, function_handler, http_event, lambda_stack
from tests.support.stores import REGION

AGENTS = """
people:
  ana: {slack: UANA, groups: [ops]}
agents:
  author:
    tools: [git_push]
    notify: {slack: {channel: "#approvals"}}
    tool_settings:
      git_push: {approvers: {groups: [ops]}}
"""
UNEXERCISED = {
    # a post that fails releases its claim (tests/functional/test_slack_channel.py, Slack down)
    ("slack_notifier", "TableReadWrite", "dynamodb:DeleteItem"),
    # a resume whose hand-off fails releases its request_id (as the resume function's)
    ("slack", "TableReadWrite", "dynamodb:DeleteItem"),
    # the inbox entries of other approvers and the interaction's actions: read through gsi1/gsi4
    ("slack", "TableReadWrite", "dynamodb:Query"),
}


def _slack_event(body: bytes, headers: dict[str, str]) -> dict[str, Any]:
    e = http_event("resume/http", body=body.decode(), path="/channels/slack", sub=None)
    e["routeKey"] = "POST /channels/slack"
    e["headers"] = {k.lower(): v for k, v in headers.items()}
    e["isBase64Encoded"] = False
    return e


def test_the_notifier_and_the_interactivity_function_call_only_what_their_roles_allow(tmp_path: Path) -> None:
    agents = tmp_path / "agents.yaml"
    agents.write_text(AGENTS, encoding="utf-8")
    with fake_slack() as slack, lambda_stack(tmp_path, RIVERBEAM_AGENTS_FILE=str(agents)) as stack:
        secrets = boto3.client("secretsmanager", region_name=REGION)
        token = secrets.create_secret(Name="riverbeam/slack-bot-token", SecretString=BOT_TOKEN)["ARN"]
        signing = secrets.create_secret(Name="riverbeam/slack-signing", SecretString=SIGNING_SECRET)["ARN"]
        os.environ.update(
            SLACK_BOT_TOKEN_SECRET=token, SLACK_SIGNING_SECRET_SECRET=signing, SLACK_API_URL=slack.url
        )
        slack_runtime.reset()  # this container's first secrets, read through its clients
        stack.handlers["slack"] = function_handler("slack")
        stack.handlers["slack_notifier"] = function_handler("slack_notifier")

        answer = stack.call("invoke", http_event("invoke/http", body=invoke_body()))
        asked = json.loads(answer["body"])
        action_id = asked["action_required"][0]["action_id"]
        records = stack.stream_records()
        assert records  # the outbox item of the asking run's closing write
        assert stack.call("slack_notifier", {"Records": records})["batchItemFailures"] == []
        (posted,) = slack.wait_for("chat.postMessage")
        assert posted["channel"] == "#approvals" and action_id in json.dumps(posted["blocks"])

        slack_runtime.reset()  # the interactivity function's container: its own secrets' cache
        answer = stack.call("slack", _slack_event(*signed(click(action_id, "UANA"))))
        assert answer["statusCode"] == 200, answer
        assert len(stack.receive()) == 1  # the decision's run is queued, as a resume's is
        assert stack.call("slack_notifier", {"Records": stack.stream_records()})["batchItemFailures"] == []
        assert any("Approved by ana" in json.dumps(u) for u in slack.named("chat.update"))

        deployed = deployment_of(stack, "none")
        assert deployed.exists("SlackFunction") and deployed.exists("SlackNotifierFunction")
        calls = stack.calls | event_source_calls(deployed)
        for function in ("slack", "slack_notifier"):
            statements = deployed.statements(role_of(function))
            mine = {c for c in calls if c.function == function}
            unused = grant_triples(statements) - used_triples(statements, mine)
            assert {(function, *t[:2]) for t in unused} <= UNEXERCISED, (function, unused)

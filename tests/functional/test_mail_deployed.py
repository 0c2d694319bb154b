"""The mail functions as deployed, on moto: the notifier fed the table's stream records sends through SES
from MailFrom, the links' function shows a page on GET and decides on POST, each with its key from Secrets
Manager; every AWS call they made is one their roles allow (the stack's own check), and every grant of
their roles is used but those of their event source mappings and the ones listed here with the reason."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import boto3
import pytest
from riverbeam.aws import mail as mail_runtime
from riverbeam.aws import slack as slack_runtime

from tests.support.agents import invoke_body
from tests.support.iam import event_source_calls, grant_triples, role_of, used_triples
from tests.support.lambda_stack import deployment_of, function_handler, http_event, lambda_stack
from tests.support.stores import REGION

SENDER = "approvals@example.com"
AGENTS = """
people:
  ana: {email: ana@example.com, groups: [ops]}
agents:
  author:
    tools: [git_push]
    tool_settings:
      git_push: {approvers: {groups: [ops]}, notify: {email: {to: [ana@example.com]}}}
"""
UNEXERCISED = {
    ("mail_notifier", "TableReadWrite", "dynamodb:DeleteItem"),  # a send that fails releases its claim
    ("mail", "TableReadWrite", "dynamodb:DeleteItem"),  # a resume whose hand-off fails frees its request_id
}


def _link_event(method: str, token: str, body: str = "") -> dict[str, Any]:
    e = http_event("resume/http", body=body, path=f"/channels/email/{token}", sub=None)
    e["routeKey"] = f"{method} /channels/email/{{token}}"
    e["requestContext"]["http"]["method"] = method
    e["pathParameters"] = {"token": token}
    e["isBase64Encoded"] = False
    return e


def test_the_mail_functions_call_only_what_their_roles_allow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agents = tmp_path / "agents.yaml"
    agents.write_text(AGENTS, encoding="utf-8")
    with lambda_stack(tmp_path, RIVERBEAM_AGENTS_FILE=str(agents)) as stack:
        boto3.client("sesv2", region_name=REGION).create_email_identity(EmailIdentity=SENDER)
        key = boto3.client("secretsmanager", region_name=REGION).create_secret(
            Name="riverbeam/mail-key", SecretString="m" * 64
        )["ARN"]
        os.environ.update(MAIL_FROM=SENDER, MAIL_KEY_SECRET=key, MAIL_LINK_BASE="https://api.example/v1")
        slack_runtime.reset()
        mail_runtime.key.cache_clear()
        stack.handlers["mail"] = function_handler("mail")
        stack.handlers["mail_notifier"] = function_handler("mail_notifier")

        asked = json.loads(stack.call("invoke", http_event("invoke/http", body=invoke_body()))["body"])
        assert asked["interrupted"]
        sent: list[Any] = []
        original = mail_runtime.send

        def keep(message: Any) -> None:  # SES sends it (moto); the test reads its links here
            sent.append(message)
            original(message)

        monkeypatch.setattr(mail_runtime, "send", keep)
        assert stack.call("mail_notifier", {"Records": stack.stream_records()})["batchItemFailures"] == []
        monkeypatch.setattr(mail_runtime, "send", original)
        assert [m["To"] for m in sent] == ["ana@example.com"] and sent[0]["From"] == SENDER
        links = dict(
            line.split(": ", 1) for line in sent[0].get_content().splitlines() if "/channels/email/" in line
        )
        token = links["Approve"].rsplit("/", 1)[1]

        slack_runtime.reset()  # the links' function: a container of its own
        mail_runtime.key.cache_clear()
        page = stack.call("mail", _link_event("GET", token))
        assert page["statusCode"] == 200 and "Approve as ana" in page["body"]
        assert stack.receive() == []  # a GET decides nothing: no run queued
        done = stack.call("mail", _link_event("POST", token))
        assert done["statusCode"] == 200 and "You approved" in done["body"]
        assert len(stack.receive()) == 1  # the decision's run is queued, as a resume's is

        deployed = deployment_of(stack, "none")
        assert deployed.exists("MailFunction") and deployed.exists("MailNotifierFunction")
        calls = stack.calls | event_source_calls(deployed)
        for function in ("mail", "mail_notifier"):
            statements = deployed.statements(role_of(function))
            mine = {c for c in calls if c.function == function}
            unused = grant_triples(statements) - used_triples(statements, mine)
            assert {(function, *t[:2]) for t in unused} <= UNEXERCISED, (function, unused)

"""The Slack and mail blocks of template.yaml, transformed as CloudFormation gets them with their parameters:
no error from cfn-lint, a route with no authorizer (Slack's signature is its door), the notifier fed by
the table's stream with a dead-letter queue of its own, and each role reading its own secrets and no other."""

from __future__ import annotations

from typing import Any

from tests.support.transformed import checker, parameters, transformed

TOKEN = "arn:aws:secretsmanager:us-east-1:123456789012:secret:riverbeam/slack-bot-token-AbCdEf"
SIGNING = "arn:aws:secretsmanager:us-east-1:123456789012:secret:riverbeam/slack-signing-GhIjKl"
MAIL_KEY = "arn:aws:secretsmanager:us-east-1:123456789012:secret:riverbeam/mail-key-MnOpQr"
SLACK = {"SlackBotTokenSecret": TOKEN, "SlackSigningSecret": SIGNING, "MailFrom": "approvals@example.com"}
SLACK["MailKeySecret"] = MAIL_KEY


def resources() -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = transformed("jwt", **SLACK)["Resources"]
    return found


def statements(role: str) -> dict[str, dict[str, Any]]:
    (policy,) = resources()[role]["Properties"]["Policies"]
    return {s["Sid"]: s for s in policy["PolicyDocument"]["Statement"]}


def test_the_template_with_slack_has_no_error_and_no_unexplained_warning() -> None:
    matches = checker.findings(transformed("jwt", **SLACK), parameters("jwt", **SLACK))
    assert not checker.unaccepted(matches), [checker.describe(m) for m in checker.unaccepted(matches)]


def test_slack_is_made_only_where_both_secrets_are_given() -> None:
    made = {n for n, r in resources().items() if r.get("Condition") == "UseSlack"}
    assert {"SlackFunction", "SlackNotifierFunction", "HttpSlackRoute", "SlackNotifierStreamSource"} <= made
    condition = transformed("jwt", **SLACK)["Conditions"]["UseSlack"]
    assert str(condition).count("SlackBotTokenSecret") == str(condition).count("SlackSigningSecret") == 1


def test_the_route_has_no_authorizer_and_the_notifier_its_own_stream_mapping() -> None:
    route = resources()["HttpSlackRoute"]["Properties"]
    assert route["RouteKey"] == "POST /channels/slack" and route["AuthorizationType"] == "NONE"
    assert "AuthorizerId" not in route
    mapping = resources()["SlackNotifierStreamSource"]["Properties"]
    assert mapping["FunctionName"] == {"Ref": "SlackNotifierFunction"}
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert mapping["DestinationConfig"]["OnFailure"]["Destination"] == {
        "Fn::GetAtt": ["SlackNotifierDeadLetterQueue", "Arn"]
    }


def test_each_slack_role_reads_its_own_secrets_and_nothing_is_granted_on_every_resource() -> None:
    interactivity = statements("SlackFunctionRole")
    notifier = statements("SlackNotifierFunctionRole")
    assert interactivity["ReadSlackSecrets"]["Resource"] == [
        {"Ref": "SlackBotTokenSecret"},
        {"Ref": "SlackSigningSecret"},
    ]
    assert notifier["ReadSlackToken"]["Resource"] == {"Ref": "SlackBotTokenSecret"}
    assert "ReadSlackSecrets" not in notifier and "EnqueueJobs" not in notifier  # it never decides
    for granted in (interactivity, notifier):
        everywhere = {sid for sid, s in granted.items() if s["Resource"] == "*"}
        assert everywhere <= {"ListTableStreams"}  # ListStreams names no resource in IAM


def test_the_mail_links_routes_have_no_authorizer_and_the_notifier_sends_only_from_mail_from() -> None:
    for name, method in (("HttpMailPageRoute", "GET"), ("HttpMailDecideRoute", "POST")):
        route = resources()[name]["Properties"]
        assert (
            route["RouteKey"] == f"{method} /channels/email/{{token}}"
            and route["AuthorizationType"] == "NONE"
        )
        assert "AuthorizerId" not in route
    notifier = statements("MailNotifierFunctionRole")
    assert notifier["SendMail"]["Action"] == "ses:SendEmail"
    assert notifier["SendMail"]["Condition"] == {"StringEquals": {"ses:FromAddress": {"Ref": "MailFrom"}}}
    assert notifier["ReadMailKey"]["Resource"] == {"Ref": "MailKeySecret"}
    links = statements("MailFunctionRole")
    assert links["ReadMailKey"]["Resource"] == {"Ref": "MailKeySecret"} and "SendMail" not in links
    for granted in (notifier, links):
        assert {sid for sid, s in granted.items() if s["Resource"] == "*"} <= {"ListTableStreams"}

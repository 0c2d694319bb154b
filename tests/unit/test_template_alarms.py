"""The template's alarms and dashboard read the metrics the code sends: the dead-letter queues, every
function's errors (a function added later is in the sum or this fails), the oldest pending approval past
PendingApprovalAlarmSeconds and the expiries, each in the namespace, name and dimension that
riverbeam.aws.approval_metrics emits; each notifies AlarmTopicArn only where one is given. cfn-lint passes
on them with the rest (test_transformed_template.py)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from riverbeam.aws import approval_metrics

from tests.support.transformed import checker, transformed

NOTIFY = {"Fn::If": ["NotifyAlarms", [{"Ref": "AlarmTopicArn"}], {"Ref": "AWS::NoValue"}]}
# each stack is its own service: two stacks in one account keep their alarms apart
SERVICE = [{"Name": "service", "Value": {"Ref": "AWS::StackName"}}]


def resources(kind: str, *, condition: str | None = None) -> dict[str, dict[str, Any]]:
    """The transformed template's resources of a kind: those made in every deployment, or (`condition`)
    only in those where it holds (UseSlack: the Slack functions and their alarm)."""
    found = transformed("jwt")["Resources"]
    return {
        name: r["Properties"]
        for name, r in found.items()
        if r["Type"] == kind and r.get("Condition") == condition
    }


@pytest.mark.parametrize(
    ("condition", "queue"),
    [("UseSlack", "SlackNotifierDeadLetterQueue"), ("UseMail", "MailNotifierDeadLetterQueue")],
)
def test_each_channels_alarm_counts_its_functions_errors_and_what_it_gave_up_on(
    condition: str, queue: str
) -> None:
    (alarm,) = resources("AWS::CloudWatch::Alarm", condition=condition).values()
    stats = [q["MetricStat"]["Metric"] for q in alarm["Metrics"] if "MetricStat" in q]
    errors = {m["Dimensions"][0]["Value"]["Ref"] for m in stats if m["MetricName"] == "Errors"}
    assert errors == set(resources("AWS::Lambda::Function", condition=condition)) != set()
    queues = [m["Dimensions"][0]["Value"] for m in stats if m["Namespace"] == "AWS/SQS"]
    assert queues == [{"Fn::GetAtt": [queue, "QueueName"]}]
    assert [q["Expression"] for q in alarm["Metrics"] if q.get("ReturnData")] == ["SUM(FILL(METRICS(), 0))"]


def test_the_alarms_are_the_dead_letter_queues_errors_forgotten_approvals_and_expiries() -> None:
    alarms = resources("AWS::CloudWatch::Alarm")
    assert set(alarms) == {
        "DeadLetterQueueAlarm",
        "EventsDeadLetterQueueAlarm",
        "FunctionErrorsAlarm",
        "OldestPendingApprovalAlarm",
        "ApprovalsExpiredAlarm",
    }
    for name, alarm in alarms.items():
        assert alarm["AlarmActions"] == alarm["OKActions"] == NOTIFY, name
        assert alarm["TreatMissingData"] == "notBreaching", name
    for name, queue in (
        ("DeadLetterQueueAlarm", "DeadLetterQueue"),
        ("EventsDeadLetterQueueAlarm", "EventsDeadLetterQueue"),
    ):
        alarm = alarms[name]
        assert (alarm["Namespace"], alarm["MetricName"]) == ("AWS/SQS", "ApproximateNumberOfMessagesVisible")
        assert alarm["Dimensions"] == [{"Name": "QueueName", "Value": {"Fn::GetAtt": [queue, "QueueName"]}}]
        assert (alarm["ComparisonOperator"], alarm["Threshold"]) == ("GreaterThanThreshold", 0)


def test_the_approval_alarms_read_what_the_code_sends() -> None:
    alarms = resources("AWS::CloudWatch::Alarm")
    oldest, expired = alarms["OldestPendingApprovalAlarm"], alarms["ApprovalsExpiredAlarm"]
    assert (oldest["Namespace"], oldest["MetricName"], oldest["Dimensions"]) == (
        approval_metrics.NAMESPACE,
        approval_metrics.OLDEST_PENDING_AGE,
        SERVICE,
    )
    assert oldest["Statistic"] == "Maximum" and oldest["Threshold"] == {"Ref": "PendingApprovalAlarmSeconds"}
    assert oldest["ComparisonOperator"] == "GreaterThanThreshold"
    assert (expired["Namespace"], expired["MetricName"], expired["Dimensions"]) == (
        approval_metrics.NAMESPACE,
        approval_metrics.APPROVALS_EXPIRED,
        SERVICE,
    )
    assert (expired["Statistic"], expired["Period"]) == ("Sum", 3600)
    assert expired["Threshold"] == {"Ref": "ExpiredApprovalsAlarmThreshold"}
    # the deployment's namespace and service are the ones the alarms read
    variables = checker.read_template()["Globals"]["Function"]["Environment"]["Variables"]
    assert variables["POWERTOOLS_METRICS_NAMESPACE"] == approval_metrics.NAMESPACE
    assert variables["POWERTOOLS_SERVICE_NAME"] == {"Ref": "AWS::StackName"}


def test_the_errors_alarm_sums_every_functions_errors() -> None:
    alarm = resources("AWS::CloudWatch::Alarm")["FunctionErrorsAlarm"]
    queries = alarm["Metrics"]
    summed = [q for q in queries if q.get("ReturnData")]
    assert [q["Expression"] for q in summed] == ["SUM(FILL(METRICS(), 0))"]
    counted = {
        q["MetricStat"]["Metric"]["Dimensions"][0]["Value"]["Ref"]
        for q in queries
        if "MetricStat" in q and q["MetricStat"]["Metric"]["MetricName"] == "Errors"
    }
    assert counted == set(resources("AWS::Lambda::Function"))
    assert all(q["MetricStat"]["Stat"] == "Sum" for q in queries if "MetricStat" in q)


def test_the_dashboard_shows_the_approvals_metrics_and_every_function() -> None:
    (dashboard,) = resources("AWS::CloudWatch::Dashboard").values()
    body = dashboard["DashboardBody"]["Fn::Sub"]
    names = set(re.findall(r"\$\{([^}]+)\}", body))
    widgets = json.loads(re.sub(r"\$\{[^}]+\}", "x", body))["widgets"]
    shown = {m[1] for w in widgets for m in w["properties"]["metrics"]}
    emitted = {
        approval_metrics.APPROVAL_LATENCY,
        approval_metrics.APPROVALS_PENDING,
        approval_metrics.OLDEST_PENDING_AGE,
        approval_metrics.APPROVALS_EXPIRED,
        approval_metrics.TOOL_DENIED,
    }
    assert emitted <= shown
    # each of the stack's own metrics is read in its namespace and its service: the stack's name
    named = json.loads(re.sub(r"\$\{([^}]+)\}", r"<\1>", body))["widgets"]
    own = [m for w in named for m in w["properties"]["metrics"] if m[0] == approval_metrics.NAMESPACE]
    assert own and all(m[2:4] == ["service", "<AWS::StackName>"] for m in own)
    assert set(resources("AWS::Lambda::Function")) <= names

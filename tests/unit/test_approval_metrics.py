"""The approvals' metrics as CloudWatch reads them: the EMF records Powertools prints, each with the
service's dimension set (the alarms') and the tool's (the dashboard's)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from beam_store.outbox import OutboxEvent
from riverbeam.aws import approval_metrics


def event(detail_type: str, tool: str, **detail: Any) -> OutboxEvent:
    return OutboxEvent(f"evt_{tool}", "riverbeam", detail_type, {"tool": tool, **detail})


def decided(tool: str, decision: str, asked: str, answered: str, **more: Any) -> OutboxEvent:
    return event(
        "Approval Decided",
        tool,
        decision=decision,
        created_at=asked,
        decided_at=answered,
        **{"decided_by": "u1", **more},
    )


def records(capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]


def metric(record: dict[str, Any]) -> tuple[str, str, Any, list[list[str]], dict[str, str]]:
    """(name, unit, value, dimension sets, dimension values) of one EMF record."""
    (directive,) = record["_aws"]["CloudWatchMetrics"]
    (definition,) = directive["Metrics"]
    assert directive["Namespace"] == "Riverbeam"
    names = {n for dims in directive["Dimensions"] for n in dims}
    value = record[definition["Name"]]  # EMF takes a value or a list of values: Powertools writes a list
    return (
        definition["Name"],
        definition["Unit"],
        value[0] if isinstance(value, list) and len(value) == 1 else value,
        directive["Dimensions"],
        {n: record[n] for n in names},
    )


def test_a_persons_decision_is_its_wait_by_tool_and_decision_and_a_refusal_counts_as_denied(
    capsys: pytest.CaptureFixture[str],
) -> None:
    approval_metrics.record_published(
        [
            event("Approval Requested", "git_push", status="pending"),  # nothing yet
            decided("git_push", "submitted", "2026-01-01T10:00:00.000000Z", "2026-01-01T10:03:00.250000Z"),
            decided("rm", "cancelled", "2026-01-01T10:00:00.000000Z", "2026-01-01T10:00:02.000000Z"),
        ]
    )
    found = [metric(r) for r in records(capsys)]
    dims = [["service"], ["service", "tool", "decision"]]
    assert found == [
        (
            "ApprovalLatency",
            "Milliseconds",
            180250.0,
            dims,
            {"service": "riverbeam", "tool": "git_push", "decision": "submitted"},
        ),
        (
            "ApprovalLatency",
            "Milliseconds",
            2000.0,
            dims,
            {"service": "riverbeam", "tool": "rm", "decision": "cancelled"},
        ),
        ("ToolDenied", "Count", 1, dims, {"service": "riverbeam", "tool": "rm", "decision": "cancelled"}),
    ]


def test_a_policys_decision_has_no_wait_and_its_denial_counts_as_deny(
    capsys: pytest.CaptureFixture[str],
) -> None:
    now = "2026-01-01T10:00:00.000000Z"
    approval_metrics.record_published(
        [
            decided("git_push", "submitted", now, now, decided_by="policy", status="resolved"),
            decided("rm", "cancelled", now, now, decided_by="policy", status="denied"),
            decided("rm", "submitted", now, now, decided_by="grant", status="resolved"),
        ]
    )
    found = [(*metric(r)[:3], metric(r)[4]) for r in records(capsys)]
    assert found == [("ToolDenied", "Count", 1, {"service": "riverbeam", "tool": "rm", "decision": "deny"})]


def test_expiries_are_counted_by_tool(capsys: pytest.CaptureFixture[str]) -> None:
    approval_metrics.record_published(
        [event("Approval Expired", t, expired_by="sweep") for t in ("rm", "git_push")]
    )
    found = [(*metric(r)[:3], metric(r)[4]) for r in records(capsys)]
    assert found == [
        ("ApprovalsExpired", "Count", 1, {"service": "riverbeam", "tool": "rm"}),
        ("ApprovalsExpired", "Count", 1, {"service": "riverbeam", "tool": "git_push"}),
    ]


def test_what_waits_is_a_count_and_the_oldest_wait(capsys: pytest.CaptureFixture[str]) -> None:
    approval_metrics.record_pending(3, 125.5)
    found = [metric(r)[:4] for r in records(capsys)]
    assert found == [
        ("ApprovalsPending", "Count", 3, [["service"]]),
        ("OldestPendingApprovalAge", "Seconds", 125.5, [["service"]]),
    ]


def test_the_deployments_namespace_and_service_are_used(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", "Other")
    monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", "svc")
    approval_metrics.record_pending(0, 0)
    record = records(capsys)[0]
    assert record["_aws"]["CloudWatchMetrics"][0]["Namespace"] == "Other" and record["service"] == "svc"


def test_metrics_switched_off_print_nothing(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    approval_metrics.record_pending(1, 1)
    approval_metrics.record_published([event("Approval Expired", "rm")])
    assert records(capsys) == []

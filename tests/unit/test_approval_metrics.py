"""The approvals' metrics as CloudWatch reads them: the EMF records Powertools prints, each with the
service's dimension set (the alarms') and the tool's (the dashboard's)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from beam_store.records import Action, ActionResponseRecord
from riverbeam.aws import approval_metrics


def action(tool: str, created_at: str, *, answered: str | None = None, when: str = "") -> Action:
    response = (
        ActionResponseRecord(status=answered, request_id="q", who="u1", when=when)  # type: ignore[arg-type]
        if answered
        else None
    )
    return Action(
        action_id="a",
        session_id="s",
        interaction_id="i",
        run_id="r",
        user_id="u1",
        agent_name="author",
        tool=tool,
        status="pending" if response is None else "resolved",
        response=response,
        created_at=created_at,
        updated_at=created_at,
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


def test_a_decision_is_its_wait_by_tool_and_decision_and_a_refusal_counts_as_denied(
    capsys: pytest.CaptureFixture[str],
) -> None:
    approval_metrics.record_decided(
        [
            action(
                "git_push",
                "2026-01-01T10:00:00.000000Z",
                answered="submitted",
                when="2026-01-01T10:03:00.250000Z",
            ),
            action(
                "rm", "2026-01-01T10:00:00.000000Z", answered="cancelled", when="2026-01-01T10:00:02.000000Z"
            ),
            action("git_push", "2026-01-01T10:00:00.000000Z"),  # not answered: nothing
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


def test_expiries_are_counted_by_tool_and_a_sweep_without_any_says_zero(
    capsys: pytest.CaptureFixture[str],
) -> None:
    approval_metrics.record_expired([action(t, "2026-01-01T10:00:00Z") for t in ("rm", "git_push", "rm")])
    approval_metrics.record_expired([])
    found = [(*metric(r)[:3], metric(r)[4]) for r in records(capsys)]
    assert found == [
        ("ApprovalsExpired", "Count", 1, {"service": "riverbeam", "tool": "git_push"}),
        ("ApprovalsExpired", "Count", 2, {"service": "riverbeam", "tool": "rm"}),
        ("ApprovalsExpired", "Count", 0, {"service": "riverbeam"}),
    ]


def test_what_waits_is_a_count_and_the_oldest_wait(capsys: pytest.CaptureFixture[str]) -> None:
    approval_metrics.record_pending(3, 125.5)
    approval_metrics.record_denied("rm", 2)
    found = [metric(r)[:4] for r in records(capsys)]
    assert found == [
        ("ApprovalsPending", "Count", 3, [["service"]]),
        ("OldestPendingApprovalAge", "Seconds", 125.5, [["service"]]),
        ("ToolDenied", "Count", 2, [["service"], ["service", "tool", "decision"]]),
    ]


def test_the_deployments_namespace_and_service_are_used(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", "Other")
    monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", "svc")
    approval_metrics.record_pending(0, 0)
    record = records(capsys)[0]
    assert record["_aws"]["CloudWatchMetrics"][0]["Namespace"] == "Other" and record["service"] == "svc"

"""The approvals' metrics, as CloudWatch embedded metric format (EMF) through Powertools: how long people
take to decide (`ApprovalLatency`, by tool and decision), how many tool calls were refused (`ToolDenied`),
how many approvals expired (`ApprovalsExpired`), and what waits now (`ApprovalsPending`,
`OldestPendingApprovalAge`).

Each metric is one EMF record with two dimension sets: the service alone (what the template's alarms and
dashboard read) and the service with the tool (and decision), to see which tool is slow or refused. The
tools are an agent's own, a bounded set."""

from __future__ import annotations

import os
from collections.abc import Iterable
from datetime import datetime

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.metrics.provider.cloudwatch_emf.cloudwatch import AmazonCloudWatchEMFProvider
from beam_store.records import Action

NAMESPACE = "Riverbeam"
SERVICE = "riverbeam"
APPROVAL_LATENCY = "ApprovalLatency"
APPROVALS_PENDING = "ApprovalsPending"
OLDEST_PENDING_AGE = "OldestPendingApprovalAge"
APPROVALS_EXPIRED = "ApprovalsExpired"
TOOL_DENIED = "ToolDenied"


def _emit(name: str, unit: MetricUnit, value: float, **dimensions: str) -> None:
    """One EMF record, printed to stdout where Lambda's log collects it (not with the handler's other
    metrics: those share one dimension set)."""
    service = os.environ.get("POWERTOOLS_SERVICE_NAME") or SERVICE
    record = AmazonCloudWatchEMFProvider(
        namespace=os.environ.get("POWERTOOLS_METRICS_NAMESPACE") or NAMESPACE, service=service
    )
    record.add_metric(name=name, unit=unit, value=value)
    if dimensions:
        record.add_dimensions(service=service, **dimensions)
    record.flush_metrics()


def _millis_between(start: str, end: str) -> float:
    return max(0.0, (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds() * 1000)


def record_decided(actions: Iterable[Action]) -> None:
    """Actions a person just answered: each one's wait (ms from the ask to the answer) by tool and
    decision (`submitted` or `cancelled`, as the response says), and a refusal as `ToolDenied`."""
    for action in actions:
        response = action.response
        if response is None:
            continue
        latency = _millis_between(action.created_at, response.when)
        _emit(APPROVAL_LATENCY, MetricUnit.Milliseconds, latency, tool=action.tool, decision=response.status)
        if response.status == "cancelled":
            _emit(TOOL_DENIED, MetricUnit.Count, 1, tool=action.tool, decision="cancelled")


def record_denied(tool: str, count: int = 1) -> None:
    """Tool calls a policy refused without asking anyone (decision `deny`)."""
    _emit(TOOL_DENIED, MetricUnit.Count, count, tool=tool, decision="deny")


def record_expired(actions: Iterable[Action]) -> None:
    """Actions nobody answered in time, by tool; a sweep that expired none says 0 (an alarm's data)."""
    by_tool: dict[str, int] = {}
    for action in actions:
        by_tool[action.tool] = by_tool.get(action.tool, 0) + 1
    if not by_tool:
        _emit(APPROVALS_EXPIRED, MetricUnit.Count, 0)
    for tool, count in sorted(by_tool.items()):
        _emit(APPROVALS_EXPIRED, MetricUnit.Count, count, tool=tool)


def record_pending(count: int, oldest_age_seconds: float) -> None:
    """What waits for a person now: how many actions, and how long the oldest has waited (0: none)."""
    _emit(APPROVALS_PENDING, MetricUnit.Count, count)
    _emit(OLDEST_PENDING_AGE, MetricUnit.Seconds, max(0.0, oldest_age_seconds))

"""The approvals' metrics, as CloudWatch embedded metric format (EMF) through Powertools: how long people
take to decide (`ApprovalLatency`, by tool and decision), how many tool calls were refused (`ToolDenied`),
how many approvals expired (`ApprovalsExpired`), and what waits now (`ApprovalsPending`,
`OldestPendingApprovalAge`).

The first three are told by the approval events as the events function publishes them: every decision and
every expiry (by the sweep, a resume or a run) has its event, written in the same transaction, so one place
sees them all, once each (a stream record delivered again after a failed put counts again: rare, and
told by `OutboxRecordsFailed`). The sweep tells what waits, on its schedule.

Each metric is one EMF record with two dimension sets: the service alone (what the template's alarms and
dashboard read) and the service with the tool (and decision), to see which tool is slow or refused. The
tools are an agent's own, a bounded set."""

from __future__ import annotations

import os
from collections.abc import Iterable
from datetime import datetime

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.metrics.provider.cloudwatch_emf.cloudwatch import AmazonCloudWatchEMFProvider
from beam_store.outbox import OutboxEvent

NAMESPACE = "Riverbeam"
SERVICE = "riverbeam"
APPROVAL_LATENCY = "ApprovalLatency"
APPROVALS_PENDING = "ApprovalsPending"
OLDEST_PENDING_AGE = "OldestPendingApprovalAge"
APPROVALS_EXPIRED = "ApprovalsExpired"
TOOL_DENIED = "ToolDenied"
# the approval events' detail-types (riverbeam.pipeline.approval_events: not imported, a module of the
# pipeline the events function has no other use for)
DECIDED = "Approval Decided"
EXPIRED = "Approval Expired"
# who decided a call that no person was asked about (a policy, a standing grant): no wait to measure
NOT_A_PERSON = ("policy", "grant")


def namespace() -> str:
    """The metrics' namespace: POWERTOOLS_METRICS_NAMESPACE, else Riverbeam."""
    return os.environ.get("POWERTOOLS_METRICS_NAMESPACE") or NAMESPACE


def service() -> str:
    """The metrics' `service` dimension: POWERTOOLS_SERVICE_NAME (the template sets the stack's name, so
    each stack's alarms read its own), else riverbeam."""
    return os.environ.get("POWERTOOLS_SERVICE_NAME") or SERVICE


def _emit(name: str, unit: MetricUnit, value: float, **dimensions: str) -> None:
    """One EMF record, printed to stdout where Lambda's log collects it (not with the handler's other
    metrics: those share one dimension set)."""
    record = AmazonCloudWatchEMFProvider(namespace=namespace(), service=service())
    record.add_metric(name=name, unit=unit, value=value)
    if dimensions:
        record.add_dimensions(service=service(), **dimensions)
    record.flush_metrics()


def _millis_between(start: str, end: str) -> float:
    """From one ISO-8601 time to another, in ms (0 where either is missing or unreadable)."""
    try:
        took = datetime.fromisoformat(end) - datetime.fromisoformat(start)
    except ValueError:
        return 0.0
    return max(0.0, took.total_seconds() * 1000)


def record_published(events: Iterable[OutboxEvent]) -> None:
    """Metrics of approval events put on the bus: a person's decision as its wait (ms from the ask to the
    answer) by tool and decision (`submitted` or `cancelled`); a refusal as `ToolDenied` (decision
    `cancelled`: a person's; `deny`: a policy's, the action stored `denied`); an expiry as
    `ApprovalsExpired`, by tool."""
    for event in events:
        detail, tool = event.detail, str(event.detail.get("tool"))
        if event.detail_type == EXPIRED:
            _emit(APPROVALS_EXPIRED, MetricUnit.Count, 1, tool=tool)
        elif detail.get("status") == "denied":
            _emit(TOOL_DENIED, MetricUnit.Count, 1, tool=tool, decision="deny")
        elif event.detail_type == DECIDED and detail.get("decided_by") not in NOT_A_PERSON:
            decision = str(detail.get("decision"))
            wait = _millis_between(str(detail.get("created_at")), str(detail.get("decided_at")))
            _emit(APPROVAL_LATENCY, MetricUnit.Milliseconds, wait, tool=tool, decision=decision)
            if decision == "cancelled":
                _emit(TOOL_DENIED, MetricUnit.Count, 1, tool=tool, decision=decision)


def record_pending(count: int, oldest_age_seconds: float) -> None:
    """What waits for a person now: how many actions, and how long the oldest has waited (0: none)."""
    _emit(APPROVALS_PENDING, MetricUnit.Count, count)
    _emit(OLDEST_PENDING_AGE, MetricUnit.Seconds, max(0.0, oldest_age_seconds))

"""The scheduled sweep (SweepFunction, an EventBridge schedule): expires the pending actions nobody answered
in time, closes what waited on them, and pushes an `action_expired` frame to each session's WebSocket
connections (pipeline/sweep.py); then tells what still waits for a person (ApprovalsPending,
OldestPendingApprovalAge: the template's alarm on a forgotten approval reads it). The schedule's event
carries nothing the sweep needs."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from . import approval_metrics, runtime
from .push import WebSocketPusher


def handle_schedule(event: dict[str, Any], context: LambdaContext | None) -> dict[str, Any]:
    beam = runtime.beam()
    pusher = WebSocketPusher(beam, runtime.management_api())
    expired = beam.sweep_expired(on_frame=pusher)
    waiting = beam.pending_approvals()
    approval_metrics.record_pending(waiting.actions, waiting.oldest_age_seconds)
    runtime.metrics.add_metric(name="ActionsExpired", unit=MetricUnit.Count, value=len(expired))
    runtime.metrics.add_metric(name="FramesPushed", unit=MetricUnit.Count, value=pusher.pushed)
    runtime.logger.info(
        "sweep done", extra={"expired": len(expired), "pushed": pusher.pushed, "pending": waiting.actions}
    )
    return {"expired": [a.action_id for a in expired]}

"""The one place a run's Actions are built (CONTRACT 1, 10, 11), each once, from what its runner returned:

- an asked call: a pending Action with the hash of its args, until when a person may answer, who may
  answer (its tool's approvers) and whether approving it may grant its tool for the session; one asked
  again by a resume's runner (a partial resume) is the stored Action as it is;
- a call decided without asking: `resolved` (with its outcome) or `denied`, `response.by` naming the policy
  or grant.

The run's Result (and its `done` frame) shows the asked ones as its `action_required`, made from these
Actions, so what a person is shown is what is stored."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from beam_store import Action, ActionResponseRecord, args_sha256

from ..models import ActionRequest, AgentResult
from ..policy.decision import DecidedCall
from ..telemetry import carriers
from .grants import grantable_tools, may_grant
from .setup import Setup
from .step import Step
from .voting import tool_approvals


def asked(
    setup: Setup, step: Step, result: AgentResult, waiting: Mapping[str, Action], now: str
) -> list[Action]:
    """A pending Action for each call the result asks about (those `waiting` already: as stored), each with
    the asking run's trace context (its `invoke_agent` span is current) for the run that resumes it."""
    traceparent = carriers.outgoing().get(carriers.TRACEPARENT)
    return [
        waiting.get(request.action_id or "") or _pending(setup, step, request, traceparent, now)
        for request in result.action_required
    ]


def _pending(setup: Setup, step: Step, request: ActionRequest, traceparent: str | None, now: str) -> Action:
    run, runner = step.run, step.runner
    assert request.action_id is not None  # given by execute.checked_result
    approvals = tool_approvals(setup, run.agent_name, runner, request.tool)
    return Action(
        **_call(step, request.action_id, request.tool, request.args, now),
        kind=request.kind,
        status="pending",
        expires_at=setup.expires_at(run.agent_name, request.expires_after),
        approvals=approvals,
        grantable=may_grant(request.tool, approvals, grantable_tools(runner)),
        traceparent=traceparent,
    )


def _call(step: Step, action_id: str, tool: str, args: dict[str, Any], now: str) -> dict[str, Any]:
    """What every Action of the run holds of its call: its ids, the run's, its tool and args (hashed)."""
    run = step.run
    return {
        "action_id": action_id,
        "session_id": run.session_id,
        "interaction_id": run.interaction_id,
        "run_id": run.run_id,
        "user_id": step.session.user_id,
        "agent_name": run.agent_name,
        "tool": tool,
        "args": dict(args),
        "args_sha256": args_sha256(args),
        "created_at": now,
        "updated_at": now,
    }


def requests(actions: list[Action]) -> list[ActionRequest]:
    """The Result's `action_required`: the asked Actions as a person is shown them."""
    return [
        ActionRequest(
            action_id=a.action_id,
            kind=a.kind,
            tool=a.tool,
            args=dict(a.args),
            args_sha256=a.args_sha256,
            expires_at=a.expires_at,
            approvals=a.approvals,
            grantable=a.grantable,
        )
        for a in actions
    ]


def decided(step: Step, result: AgentResult, now: str) -> list[Action]:
    """An Action for each call decided without asking: `resolved` (with its outcome) or `denied`, with
    `response.by` naming the policy or grant."""
    return [_decided(step, call, result, now) for call in result.decided]


def _decided(step: Step, call: DecidedCall, result: AgentResult, now: str) -> Action:
    run, allowed, by = step.run, call.decision.effect == "allow", call.decision.by()
    response = ActionResponseRecord(
        status="submitted" if allowed else "cancelled", request_id=run.run_id, who=by["kind"], when=now, by=by
    )
    ran = (
        {
            "run_args": dict(call.args),
            "run_args_sha256": args_sha256(call.args),
            "outcome": result.tool_outcomes.get(call.action_id),
        }
        if allowed
        else {}
    )
    return Action(
        **_call(step, call.action_id, call.tool, call.args, now),
        status="resolved" if allowed else "denied",
        response=response,
        resolved_run_id=run.run_id,
        **ran,
    )

"""Approval events for other channels (issue 13): each action asked for, decided and expired is handed to
the RiverBeam's event sink as an ApprovalEvent, after the write that made it so has committed (never for
a write that lost its condition). The AWS runtime's sink puts them on an EventBridge bus (source
`riverbeam`); here they are plain data, and a sink that fails is logged and never fails the step.

Delivery is at most once: a process that dies between the commit and the put loses the event, and a
put EventBridge refuses is logged, not retried. The records stay the truth (GET /actions/{id}).

    detail-type          when                                          detail (besides the action's audit)
    Approval Requested   a run closed asking for the action (pending)  -
    Approval Decided     a resume resolved it (submitted / cancelled)  decision, decided_by, decided_at,
                                                                       request_id, reason, edited, ...
    Approval Expired     it expired: found past its time by a resume,  expired_by: sweep | resume | run,
                         by the interaction's next run, or the sweep    expired_at
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from typing import Any, Final, Literal, NamedTuple

from beam_store import Action

logger = logging.getLogger(__name__)

SOURCE = "riverbeam"
REQUESTED: Final = "Approval Requested"
DECIDED: Final = "Approval Decided"
EXPIRED: Final = "Approval Expired"
DetailType = Literal["Approval Requested", "Approval Decided", "Approval Expired"]
ExpiredBy = Literal["sweep", "resume", "run"]
# the detail's version: a field is only ever added to it
DETAIL_VERSION = 1
# args larger than this (bytes of compact JSON) are left out of an event (`args_omitted`: true; read the
# action); a reason longer than this many characters is clipped (`reason_clipped`: true). An event then
# stays far under EventBridge's 256 KB an entry.
ARGS_LIMIT = 8 * 1024
REASON_LIMIT = 2 * 1024


# a NamedTuple, not a frozen dataclass: one costs every cold start a millisecond or more to make
class ApprovalEvent(NamedTuple):
    detail_type: DetailType
    detail: dict[str, Any]
    source: str = SOURCE


EventSink = Callable[[Sequence[ApprovalEvent]], None]


class EventLog(list[ApprovalEvent]):
    """An in-process sink: keeps every event it is given, in order (tests, embedding applications)."""

    def __call__(self, events: Sequence[ApprovalEvent]) -> None:
        self.extend(events)


def _bounded_args(name: str, args: dict[str, Any] | None) -> dict[str, Any]:
    if args is None:
        return {}
    if len(json.dumps(args, ensure_ascii=False, separators=(",", ":")).encode()) > ARGS_LIMIT:
        return {f"{name}_omitted": True}
    return {name: args}


def _decision(action: Action) -> dict[str, Any]:
    response = action.response
    if response is None:
        return {}
    reason = response.reason
    clipped = reason is not None and len(reason) > REASON_LIMIT
    return {
        "decision": response.status,
        "decided_by": response.who,
        "decided_at": response.when,
        "request_id": response.request_id,
        "reason": reason[:REASON_LIMIT] if reason is not None else None,
        **({"reason_clipped": True} if clipped else {}),
        "edited": response.edited_args is not None,
        "approved_args_sha256": response.args_sha256,
        "edited_args_sha256": response.edited_args_sha256,
        **_bounded_args("edited_args", response.edited_args),
        "run_args_sha256": action.run_args_sha256,
        "resolved_run_id": action.resolved_run_id,
    }


def detail(action: Action, detail_type: DetailType, **extra: Any) -> dict[str, Any]:
    """The event's detail: the action's audit fields (its args only where small), and what happened."""
    found = {
        "version": DETAIL_VERSION,
        "action_id": action.action_id,
        "kind": action.kind,
        "tool": action.tool,
        "status": action.status,
        "session_id": action.session_id,
        "interaction_id": action.interaction_id,
        "run_id": action.run_id,
        "agent_name": action.agent_name,
        "user_id": action.user_id,
        "args_sha256": action.args_sha256,
        **_bounded_args("args", action.args),
        "expires_at": action.expires_at,
        "created_at": action.created_at,
        "updated_at": action.updated_at,
    }
    if detail_type == DECIDED:
        found |= _decision(action)
    if detail_type == EXPIRED:
        found["expired_at"] = action.updated_at
    return found | extra


def publish(sink: EventSink | None, detail_type: DetailType, actions: Sequence[Action], **extra: Any) -> None:
    """Hand the sink one event per action; whatever fails is logged, never raised (the write that the
    events tell of has committed: the step goes on)."""
    if sink is None or not actions:
        return
    try:
        sink([ApprovalEvent(detail_type, detail(a, detail_type, **extra)) for a in actions])
    except Exception:
        logger.exception("approval events were not published", extra={"detail_type": detail_type})

"""Approval events for other channels: each action asked for, decided and expired is an ApprovalEvent with a
stable id, written to the store's outbox in the same atomic write as the step that made it so (the run's
closing write, the resume's resolution, the expiry's conditional write): a write that commits has its
events, one that loses its condition has none.

They leave the outbox two ways. A deployment publishes them from the table's DynamoDB stream (the events
function, riverbeam/aws/outbox.py): at least once, also when the function that wrote them died right after
its write. In process, the RiverBeam's event sink is handed the events of each write after it commits (at
most once: a sink that fails is logged and never fails the step; the outbox still holds them). Either way
an event keeps its id, `evt_<action_id>_<requested|decided|expired>`, in `detail["id"]`: a consumer
dedupes on it.

    detail-type          when                                          detail (besides the action's audit)
    Approval Requested   a run closed asking for the action (pending)  approvals (where its tool names them)
    Approval Decided     a resume resolved it (submitted / cancelled)  decision, decided_by, decided_at,
                                                                       request_id, reason, edited, votes, ...
    Approval Expired     it expired: found past its time by a resume,  expired_by: sweep | resume | run,
                         by the interaction's next run, or the sweep    expired_at
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from typing import Any, Final, Literal, NamedTuple

from beam_store import Action, OutboxEvent

logger = logging.getLogger(__name__)

SOURCE = "riverbeam"
REQUESTED: Final = "Approval Requested"
DECIDED: Final = "Approval Decided"
EXPIRED: Final = "Approval Expired"
DetailType = Literal["Approval Requested", "Approval Decided", "Approval Expired"]
ExpiredBy = Literal["sweep", "resume", "run"]
# the id's last part: an action is asked for, decided and expired at most once each
KINDS: Final = {REQUESTED: "requested", DECIDED: "decided", EXPIRED: "expired"}
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

    @property
    def id(self) -> str:
        """The event's stable id (the same on every delivery)."""
        return str(self.detail["id"])


EventSink = Callable[[Sequence[ApprovalEvent]], None]


class EventLog(list[ApprovalEvent]):
    """An in-process sink: keeps every event it is given, in order (tests, embedding applications)."""

    def __call__(self, events: Sequence[ApprovalEvent]) -> None:
        self.extend(events)


def event_id(action_id: str, detail_type: DetailType) -> str:
    return f"evt_{action_id}_{KINDS[detail_type]}"


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
        # who decided: a person, the agent's policy, a standing grant (CONTRACT 11)
        "by": response.by.model_dump(mode="json") if response.by is not None else None,
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
        # each approver's vote, where a quorum decided (the last one decided)
        **({"votes": [v.model_dump(mode="json") for v in response.votes]} if response.votes else {}),
    }


def detail(action: Action, detail_type: DetailType, **extra: Any) -> dict[str, Any]:
    """The event's detail: its id, the action's audit fields (its args only where small), and what
    happened."""
    found = {
        "id": event_id(action.action_id, detail_type),
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
        # the asking run's W3C trace context, where it was traced: a consumer's spans may link to it
        **({"traceparent": action.traceparent} if action.traceparent else {}),
        # who may answer it, where its tool names approvers: a rule routes the request to them
        **({"approvals": action.approvals.model_dump(mode="json")} if action.approvals else {}),
    }
    if detail_type == DECIDED:
        found |= _decision(action)
    if detail_type == EXPIRED:
        found["expired_at"] = action.updated_at
    return found | extra


def approval_events(detail_type: DetailType, actions: Sequence[Action], **extra: Any) -> list[ApprovalEvent]:
    """One event per action, as the write that tells of them stores the actions."""
    return [ApprovalEvent(detail_type, detail(a, detail_type, **extra)) for a in actions]


def outbox(events: Sequence[ApprovalEvent]) -> list[OutboxEvent]:
    """The events as the store's outbox keeps them."""
    return [OutboxEvent(e.id, e.source, e.detail_type, e.detail) for e in events]


def expiry_outbox(expired_by: ExpiredBy) -> Callable[[Action], list[OutboxEvent]]:
    """What an expiry's write keeps in the outbox (store.expire_action's `outbox`), from the action it
    expires."""

    def events_of(expired: Action) -> list[OutboxEvent]:
        return outbox(approval_events(EXPIRED, [expired], expired_by=expired_by))

    return events_of


def deliver(sink: EventSink | None, events: Sequence[ApprovalEvent]) -> None:
    """Hand the sink the events of a write that committed; whatever fails is logged, never raised (the
    write has committed: the step goes on, and the outbox keeps the events)."""
    if sink is None or not events:
        return
    try:
        sink(list(events))
    except Exception:
        logger.exception("approval events were not delivered", extra={"detail_type": events[0].detail_type})

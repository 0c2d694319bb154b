"""Why a step is refused, and in which order a store reports it: both stores share this module.

Each part of a step is written on a condition; a part whose record is not as the step needs it is a
conflict. Of several, the first in this order is reported:

    1. actions, in the order given: resolve, then record an outcome, then open, then tell that one
       expired (ActionConflict)
    2. the session: missing (SessionMissing), another owner's (SessionOwnedByOther)
    3. the interaction: created twice (RecordExists), missing, in another session, busy, not held by the run
    4. the run: created twice (RecordExists), closed while not running (RunNotRunning)
    5. a message that exists (RecordExists)

InMemoryStore looks at every part's current record. DynamoDB tells only which conditions failed, with the
item each found (`failed=True`): a part it names is a conflict even where its item did not come back, and
a session that is the caller's but whose counter moved is no conflict at all: the step is sent again
(its messages, put at stale seqs, collided too).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, TypeVar

from pydantic import BaseModel

from .approvers import votes_before
from .records import Action, Interaction, Run, Session
from .step_write import StepWrite
from .store_errors import (
    ActionConflict,
    InteractionBusy,
    InteractionInOtherSession,
    InteractionMissing,
    RecordExists,
    RunNotRunning,
    SessionMissing,
    SessionOwnedByOther,
    StoreConflict,
)

PartKind = Literal[
    "resolve",
    "outcome",
    "open",
    "told",
    "session",
    "interaction",
    "run",
    "message",
    "frame",
    "outbox",
    "inbox",
    "state",
]
# a part of a step: what is written, and the id of its record
Part = tuple[PartKind, str]
M = TypeVar("M", bound=BaseModel)
ActionOp = Literal["resolve", "outcome", "open", "told"]


def action_conflict(
    op: ActionOp,
    wanted: Action,
    current: Action | None,
    run_id: str,
    *,
    failed: bool = False,
    now: str | None = None,
) -> ActionConflict | None:
    if op == "resolve":  # still pending, not past its time at `now` (the step's), no vote since read
        holds = (
            current is not None
            and current.status == "pending"
            and current.interaction_id == wanted.interaction_id
            and current.session_id == wanted.session_id
            and (current.expires_at is None or now is None or current.expires_at > now)
            and votes_before(wanted) in (None, len(current.votes))
        )
    elif op == "told":
        holds = current is not None and current.status == "expired" and current.resolved_run_id is None
    elif op == "outcome":
        holds = (
            current is not None
            and current.status == "resolved"
            and current.resolved_run_id == run_id
            and current.outcome is None
        )
    else:  # one already pending in the same interaction is left as it is
        holds = current is None or (
            current.status == "pending" and current.interaction_id == wanted.interaction_id
        )
    return ActionConflict(wanted.action_id, current) if failed or not holds else None


def session_conflict(
    step: StepWrite, current: Session | None, *, failed: bool = False
) -> StoreConflict | None:
    if current is None and (failed or step.session_op == "update"):
        return SessionMissing("the session does not exist")
    if current is not None and current.user_id != step.session.user_id:
        return SessionOwnedByOther(current.user_id)
    return None


def interaction_conflict(
    step: StepWrite, current: Interaction | None, *, failed: bool = False
) -> StoreConflict | None:
    if step.interaction_op == "create":
        return RecordExists("the interaction already exists") if failed or current is not None else None
    if current is None:
        return InteractionMissing("the interaction does not exist")
    if step.interaction_op == "acquire":
        if current.session_id != step.interaction.session_id:
            return InteractionInOtherSession(current.session_id)
        busy = failed or current.active_run_id is not None
        return InteractionBusy(current.active_run_id or "") if busy else None
    if failed or current.active_run_id != step.run.run_id:
        return RunNotRunning("the interaction is no longer held by this run")
    return None


def run_conflict(step: StepWrite, current: Run | None, *, failed: bool = False) -> StoreConflict | None:
    if step.run_op == "create":
        return RecordExists("the run already exists") if failed or current is not None else None
    if failed or current is None or current.status != "running":
        return RunNotRunning("the run is not running")
    return None


def _action_parts(step: StepWrite) -> list[tuple[ActionOp, Action]]:
    return [
        *(("resolve", a) for a in step.resolve_actions),
        *(("outcome", a) for a in step.record_outcomes),
        *(("open", a) for a in step.open_actions),
        *(("told", a) for a in step.tell_expired),
    ]


def _current(found: Mapping[Part, BaseModel | None], part: Part, model: type[M]) -> M | None:
    current = found[part]
    assert current is None or isinstance(current, model)
    return current


def first_conflict(
    step: StepWrite, found: Mapping[Part, BaseModel | None], *, failed: bool = False
) -> StoreConflict | None:
    """The conflict to report for `step`, given the current record of each part the store looked at
    (`found`; a message's part is there only where the message exists); None if there is none."""
    run_id, now = step.run.run_id, step.run.updated_at
    conflicts: list[StoreConflict | None] = [
        action_conflict(
            op, wanted, _current(found, (op, wanted.action_id), Action), run_id, failed=failed, now=now
        )
        for op, wanted in _action_parts(step)
        if (op, wanted.action_id) in found
    ]
    session_part: Part = ("session", step.session.session_id)
    if session_part in found:
        conflicts.append(session_conflict(step, _current(found, session_part, Session), failed=failed))
    interaction_part: Part = ("interaction", step.interaction.interaction_id)
    if interaction_part in found:
        current = _current(found, interaction_part, Interaction)
        conflicts.append(interaction_conflict(step, current, failed=failed))
    if ("run", run_id) in found:
        conflicts.append(run_conflict(step, _current(found, ("run", run_id), Run), failed=failed))
    first = next((c for c in conflicts if c is not None), None)
    if first is not None or (failed and session_part in found):
        return first  # with no conflict, a session's counter that moved: the step is sent again
    if any(kind == "message" for kind, _ in found):
        return RecordExists("a message of the step already exists")
    return None

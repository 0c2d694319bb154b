"""Actions that nobody answered in time (CONTRACT 1, `expires_at`): expired lazily, when a resume or the
interaction's next run touches them, each by one conditional write on the action (pending and past its
time), so a resolution racing it (conditional on the opposite) has exactly one outcome; and told to the
agent by the interaction's next run, once (a tool message with status error and BEM-070). The sweep
(sweep.py) expires the overdue actions nobody touches; an expiry is an approval event (events.py), kept in
the outbox by the expiry's own write, and an interaction that waits on nothing any more is closed
(`settle`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from beam_store import Action, ActionConflict, MessageDraft
from beam_store.records import overdue

from ..errors import BeamError
from . import approval_events as events
from . import checks
from .setup import Setup


def settle_refusal(
    setup: Setup, found: Mapping[str, Action | None], refusal: BeamError, now: str, ids: tuple[str, str, str]
) -> BeamError:
    """A refused resume's answer. Where it is BEM-070, each action answered past its time is stored
    `expired`; one that a resolution took first is answered as that resolution left it (BEM-066)."""
    if refusal.code != "BEM-070":
        return refusal
    interaction_id, session_id, user_id = ids
    expired: list[Action] = []
    answer = refusal
    for action_id, action in found.items():
        if action is None or not overdue(action, now):
            continue
        after, expired_now = setup.store.expire_action(action_id, now, outbox=events.expiry_outbox("resume"))
        if expired_now and after is not None:
            expired.append(after)
        elif after is not None and after.status != "expired":
            answer = checks.action_refusal(action_id, after, interaction_id, session_id, user_id) or refusal
            break
    events.deliver(setup.events, events.approval_events(events.EXPIRED, expired, expired_by="resume"))
    for action in expired[:1]:  # nothing may wait on the interaction now (the sweep's rule)
        settle(setup, action.interaction_id, {a.action_id for a in expired}, now)
    return answer


def settle(setup: Setup, interaction_id: str, expired: set[str], now: str) -> bool:
    """Close an interaction that waits on nothing any more: no run holds it and none of its actions is
    pending (those just `expired` aside). It is stored `completed`: nobody answered, nothing failed, and
    its actions say why (`expired`); its next run (an invoke naming it) tells the agent, as for any
    expiry. What it decides from is read from the table (get_interaction_waiting), never from an index
    that may not show an action a run asked for a moment ago; and it is one conditional write on what it
    read: a run that took or changed the interaction since keeps it as that run leaves it."""
    seen, pending = setup.store.get_interaction_waiting(interaction_id)
    if seen is None or seen.status != "in_progress" or seen.active_run_id is not None:
        return False
    if any(action.action_id not in expired for action in pending):
        return False
    return setup.store.settle_interaction(
        interaction_id, "completed", session_id=seen.session_id, seen_updated_at=seen.updated_at, now=now
    )


def lost_resolution(
    conflict: ActionConflict, answered: Mapping[str, object], ids: tuple[str, str, str], now: str
) -> BeamError:
    """Why a resume's opening write lost an action: its own action resolved or expired meanwhile (the
    action's refusal), or an expiry another run told first (that run held the interaction: BEM-040)."""
    if conflict.action_id not in answered:
        return BeamError("BEM-040", field="interaction_id")
    current = conflict.current
    if current is not None and overdue(current, now):
        return checks.expired(conflict.action_id, current)
    return checks.action_refusal(conflict.action_id, current, *ids) or BeamError(
        "BEM-066", f"action {conflict.action_id} is not pending"
    )


def untold(
    setup: Setup,
    ids: tuple[str, str, str],
    now: str,
    listed: Sequence[Action] | None = None,
) -> tuple[list[Action], list[MessageDraft]]:
    """The interaction's actions that expired (those past their time are expired now) and that no run
    told the agent of yet, with the tool messages that tell it: for the next run's opening write.
    `ids`: the interaction, the session the step is in, the run. `listed`: the interaction's actions
    where the step read them already (a resume), else read here. An interaction whose actions are in
    another session is refused (BEM-022, as the opening write would) before anything is expired: a
    request naming another user's interaction changes nothing of it."""
    interaction_id, session_id, run_id = ids
    actions = list(listed) if listed is not None else setup.store.list_actions(interaction_id)
    if any(a.session_id != session_id for a in actions):
        raise BeamError("BEM-022", field="interaction_id")
    clock_now = setup.now()
    expired: list[Action] = []
    expired_now: list[Action] = []
    for action in actions:
        if overdue(action, clock_now):
            after, expired_here = setup.store.expire_action(
                action.action_id, clock_now, outbox=events.expiry_outbox("run")
            )
            if expired_here and after is not None:
                expired_now.append(after)
            action = after or action
        if action.status == "expired" and action.resolved_run_id is None:
            expired.append(action)
    events.deliver(setup.events, events.approval_events(events.EXPIRED, expired_now, expired_by="run"))
    return expired, [checks.expiry_message(a, run_id, now) for a in expired]


def busy(conflict: ActionConflict) -> BeamError:
    """An invoke's opening write lost telling an expiry: another run of the interaction told it."""
    return BeamError("BEM-040", field="interaction_id")

"""A step as one TransactWriteItems, and its CancellationReasons read back as the step's conflict.

Each item is one part of the step (conflicts.Part), in this order, each on its condition:

    resolve   Update ACTION   exists, pending, in the interaction and session, not past expires_at
                              (and leaves gsi3, the pending actions' index)
    outcome   Update ACTION   resolved by this run, no outcome yet
    open      Update ACTION   missing, or pending in the same interaction (then left as it is)
    told      Update ACTION   expired, its expiry not told yet (no resolved_run_id)
    session   Put SESSION     missing                       (a new session)
              Update SESSION  exists, same owner, last_seq as read (when the step has messages);
                              sets or removes the interaction's `open#<id>` (step.opened_after)
    interaction Put           missing                       (create, held by the run)
              Update          exists, same session, no run  (acquire)
              Update          held by this run              (release; keeps `waiting_on`, the
                                                            actions it leaves pending)
    run       Put RUN         missing (create) / still running (close)
    message   Put MSG#<seq>   missing: seqs after the counter, so a writer that lost the counter collides
    frame     Put FRAME#<n>   none (a frame is written once, whoever writes it)
    outbox    Put OUTBOX#<id> none: the step's events (outbox.py), an item or two whatever their number
    state     Put/Delete      none: the interaction's state (INTERACTION#<id> / STATE), where the step
                              keeps or drops one; the run's and interaction's conditions guard it
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from ..approvers import votes_before
from ..conflicts import Part, first_conflict
from ..records import Action, Interaction, Run, Session
from ..step_write import StepWrite, numbered, opened_after
from ..store_errors import StoreConflict
from .expressions import Expression, put_new, updated
from .inbox_items import entry_writes
from .items import (
    PENDING_INDEX_ATTRIBUTES,
    WAITING_ATTRIBUTE,
    action_attrs,
    action_gsi1sk,
    action_gsi2sk,
    action_key,
    frame_item,
    grant_attribute,
    grant_value,
    interaction_item,
    interaction_key,
    load,
    message_item,
    open_attribute,
    run_item,
    serialize,
    serialize_json,
    session_item,
    session_key,
    state_key,
)
from .outbox_items import outbox_items

# how many votes an action holds: what a vote is conditioned on (the votes themselves are JSON)
VOTE_COUNT = "vote_count"
RETRYABLE = ("TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded")
MODELS: dict[str, type[BaseModel]] = {
    "resolve": Action,
    "outcome": Action,
    "open": Action,
    "told": Action,
    "session": Session,
    "interaction": Interaction,
    "run": Run,
}


def resolve_update(action: Action, now: str) -> dict[str, Any]:
    """The action as a resolution (or a vote that does not resolve it: still pending) leaves it, on its
    condition: pending, in its interaction and session, not past its time, and holding the votes before
    the last one where it carries votes (so of concurrent votes, one is written)."""
    e = Expression()
    condition = e.all(
        e.exists(),
        e.eq("status", "pending"),
        e.eq("interaction_id", action.interaction_id),
        e.eq("session_id", action.session_id),
        e.any(e.missing("expires_at"), f"{e.name('expires_at')} > {e.value(serialize(now))}"),
        *_votes_seen(action, e),
    )
    response = action.response.model_dump(mode="json", exclude_none=True) if action.response else None
    changes = {
        "status": serialize(action.status),
        "response": serialize_json(response),
        "resolved_run_id": serialize(action.resolved_run_id),
        "updated_at": serialize(now),
        "gsi1sk": serialize(action_gsi1sk(action)),
        "gsi2sk": serialize(action_gsi2sk(action)),
    }
    if action.votes:
        changes["votes"] = serialize_json(
            [v.model_dump(mode="json", exclude_none=True) for v in action.votes]
        )
        changes[VOTE_COUNT] = serialize(len(action.votes))
    if action.run_args is not None:
        changes["run_args"] = serialize_json(action.run_args)
        changes["run_args_sha256"] = serialize(action.run_args_sha256)
    # no longer pending: out of the sweep's index and the owner's inbox
    gone = f" {e.removes(*PENDING_INDEX_ATTRIBUTES)}" if action.status != "pending" else ""
    update = f"{e.sets(changes)}{gone}"
    return e.apply(
        {"Key": action_key(action.action_id), "UpdateExpression": update, "ConditionExpression": condition}
    )


def _votes_seen(action: Action, e: Expression) -> list[str]:
    """The condition that no vote was added since the action was read (approvers.votes_before)."""
    before = votes_before(action)
    if before is None:
        return []
    return [e.missing(VOTE_COUNT) if before == 0 else e.eq(VOTE_COUNT, before)]


def _outcome(action: Action, run_id: str, now: str) -> dict[str, Any]:
    e = Expression()
    condition = e.all(e.eq("status", "resolved"), e.eq("resolved_run_id", run_id), e.missing("outcome"))
    outcome = action.outcome.model_dump(mode="json", exclude_none=True) if action.outcome else None
    changes = {"outcome": serialize_json(outcome), "updated_at": serialize(now)}
    if action.status == "denied":  # denied as it was to run: its status, response and indexes too
        response = action.response.model_dump(mode="json", exclude_none=True) if action.response else None
        changes |= {
            "status": serialize(action.status),
            "response": serialize_json(response),
            "gsi1sk": serialize(action_gsi1sk(action)),
            "gsi2sk": serialize(action_gsi2sk(action)),
        }
    return updated(action_key(action.action_id), changes, condition, e)


def _told(action: Action, run_id: str, now: str) -> dict[str, Any]:
    e = Expression()
    condition = e.all(e.eq("status", "expired"), e.missing("resolved_run_id"))
    changes = {"resolved_run_id": serialize(run_id), "updated_at": serialize(now)}
    return updated(action_key(action.action_id), changes, condition, e)


def _open(action: Action) -> dict[str, Any]:
    e = Expression()
    pending_here = e.all(e.eq("status", "pending"), e.eq("interaction_id", action.interaction_id))
    condition = e.any(e.missing(), f"({pending_here})")
    return updated(action_key(action.action_id), action_attrs(action), condition, e, keep_existing=True)


def _session(step: StepWrite, exists: bool, expected_seq: int, now: str) -> tuple[str, dict[str, Any]]:
    count = len(step.messages)
    if not exists:
        opened = opened_after(step, {}, 1)
        session = step.session.model_copy(
            update={"last_seq": count, "updated_at": now, "open_interactions": opened}
        )
        if step.touch_last_active:
            session = session.model_copy(update={"last_active_at": now})
        return "Put", put_new(session_item(session))
    e = Expression()
    changes = {"updated_at": serialize(now)}
    if step.touch_last_active:
        changes["last_active_at"] = serialize(now)
    changes |= {grant_attribute(g): grant_value(g) for g in step.add_grants}
    conditions = [e.exists(), e.eq("user_id", step.session.user_id)]
    if count:
        changes["last_seq"] = serialize(expected_seq + count)
        conditions.append(e.eq("last_seq", expected_seq))
    update = e.sets(changes) + _opened(step, e, expected_seq + 1)
    return "Update", e.apply(
        {
            "Key": session_key(step.session.session_id),
            "UpdateExpression": update,
            "ConditionExpression": e.all(*conditions),
        }
    )


def _opened(step: StepWrite, e: Expression, first_seq: int) -> str:
    """What the step changes of the session's interactions in progress (step.opened_after), as the rest
    of the session's update expression: its own `open#<id>` set (kept where it is there) or removed."""
    attribute = open_attribute(step.interaction.interaction_id)
    if step.interaction_op in ("create", "acquire"):
        name = e.name(attribute)
        return f", {name} = if_not_exists({name}, {e.value(serialize(first_seq))})"
    if step.interaction.status == "in_progress":
        return ""
    return " " + e.removes(attribute)


def _interaction(step: StepWrite, now: str) -> tuple[str, dict[str, Any]]:
    interaction, run_id = step.interaction, step.run.run_id
    key = interaction_key(interaction.interaction_id)
    e = Expression()
    if step.interaction_op == "create":
        created = interaction.model_copy(update={"status": "in_progress", "active_run_id": run_id})
        return "Put", put_new(interaction_item(created))
    if step.interaction_op == "acquire":
        changes = {
            "status": serialize("in_progress"),
            "active_run_id": serialize(run_id),
            "updated_at": serialize(now),
        }
        if interaction.requester_groups is not None:  # the requester's own request: their groups now
            changes["requester_groups"] = serialize(list(interaction.requester_groups))
        condition = e.all(e.exists(), e.eq("session_id", interaction.session_id), e.missing("active_run_id"))
        return "Update", updated(key, changes, condition, e)
    condition = e.eq("active_run_id", run_id)
    changes = {"status": serialize(interaction.status), "updated_at": serialize(now)}
    # the actions it leaves pending (not those a policy or grant decided in the run)
    waiting = [a.action_id for a in step.open_actions if a.status == "pending"]
    if waiting:
        changes[WAITING_ATTRIBUTE] = serialize(waiting)
    release = e.sets(changes)
    gone = ("active_run_id",) if waiting else ("active_run_id", WAITING_ATTRIBUTE)
    update = f"{release} {e.removes(*gone)}"
    return "Update", e.apply({"Key": key, "UpdateExpression": update, "ConditionExpression": condition})


def _run(step: StepWrite) -> dict[str, Any]:
    if step.run_op == "create":
        return put_new(run_item(step.run))
    e = Expression()
    return e.apply({"Item": run_item(step.run), "ConditionExpression": e.eq("status", "running")})


def transact_items(
    step: StepWrite, table: str, session_exists: bool, expected_seq: int
) -> tuple[list[dict[str, Any]], list[Part]]:
    """The step's TransactItems and, item for item, the part each writes."""
    now, run_id = step.run.updated_at, step.run.run_id
    writes: list[tuple[Part, str, dict[str, Any]]] = [
        *((("resolve", a.action_id), "Update", resolve_update(a, now)) for a in step.resolve_actions),
        *((("outcome", a.action_id), "Update", _outcome(a, run_id, now)) for a in step.record_outcomes),
        *((("open", a.action_id), "Update", _open(a)) for a in step.open_actions),
        *((("told", a.action_id), "Update", _told(a, run_id, now)) for a in step.tell_expired),
        (("session", step.session.session_id), *_session(step, session_exists, expected_seq, now)),
        (("interaction", step.interaction.interaction_id), *_interaction(step, now)),
        (("run", run_id), "Put", _run(step)),
        *(
            (("message", m.message_id), "Put", put_new(message_item(m)))
            for m in numbered(step, expected_seq if session_exists else 0)
        ),
    ]
    items = [
        {kind: op | {"TableName": table, "ReturnValuesOnConditionCheckFailure": "ALL_OLD"}}
        for _, kind, op in writes
    ]
    parts: list[Part] = [part for part, _, _ in writes]
    inbox = [
        (a.action_id, w) for a in (*step.resolve_actions, *step.open_actions) for w in _entries(a, table, now)
    ]
    items += [w for _, w in inbox]
    parts += [("inbox", action_id) for action_id, _ in inbox]
    expires_at = step.frames_expire_at
    items += [{"Put": {"TableName": table, "Item": frame_item(run_id, f, expires_at)}} for f in step.frames]
    parts += [("frame", str(f["frame_seq"])) for f in step.frames]
    outbox = outbox_items(step.outbox)
    items += [{"Put": {"TableName": table, "Item": item}} for item in outbox]
    parts += [("outbox", item["pk"]["S"]) for item in outbox]
    if step.state_op is not None:
        items.append(_state(step, table))
        parts.append(("state", step.interaction.interaction_id))
    return items, parts


def _state(step: StepWrite, table: str) -> dict[str, Any]:
    key = state_key(step.interaction.interaction_id)
    if step.state_op == "delete":
        return {"Delete": {"TableName": table, "Key": key}}
    kept = {"state": serialize_json(step.state), "run_id": serialize(step.run.run_id)}
    return {"Put": {"TableName": table, "Item": key | kept | {"updated_at": serialize(step.run.updated_at)}}}


def _entries(action: Action, table: str, now: str) -> list[dict[str, Any]]:
    """The action's inbox entries as the step leaves the action (inbox_items.py)."""
    return entry_writes(action.model_copy(update={"updated_at": now}), table)


def refused(step: StepWrite, parts: list[Part], reasons: Sequence[Mapping[str, Any]]) -> Session | None:
    """Raise the conflict that the cancellation reasons show (conflicts.py: in which order); else the
    session to send the step again with, where its counter moved (None: send it again as it was)."""
    found: dict[Part, BaseModel | None] = {}
    for part, reason in zip(parts, reasons, strict=False):
        code = reason.get("Code", "None")
        if code == "ConditionalCheckFailed":
            model = MODELS.get(part[0])
            found[part] = load(model, reason.get("Item")) if model is not None else None
        elif code not in (*RETRYABLE, "None", None):
            raise StoreConflict(f"{part[0]} write refused: {code} {reason.get('Message', '')}".strip())
    conflict = first_conflict(step, found, failed=True)
    if conflict is not None:
        raise conflict
    session = found.get(("session", step.session.session_id))
    assert session is None or isinstance(session, Session)
    return session

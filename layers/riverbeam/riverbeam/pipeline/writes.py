"""The step's writes, each one atomic StepWrite: open (invoke, resume), close, close failed; and the one
mapping from a store's refusal to the contract's codes.

    open     session create|update, interaction create|acquire, run create, the input and resolution
             messages, the resolved actions (each still pending: exactly one resume wins) and their
             approval events
    close    run close (still running), interaction release, the agent's messages, the actions it asks
             for (with their approval events), the outcomes of the tools it ran, the last frames, the
             session's last_active_at
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Collection, Sequence
from typing import Any

from beam_store import (
    Action,
    ActionConflict,
    BeamStore,
    ContentTooLarge,
    ErrorInfo,
    Interaction,
    InteractionBusy,
    InteractionInOtherSession,
    InteractionMissing,
    Message,
    MessageDraft,
    Run,
    Session,
    SessionMissing,
    SessionOwnedByOther,
    StepWrite,
    StoreBusy,
    StoreConflict,
    ToolOutcome,
    ToolResultPart,
    new_id,
)
from beam_store.records import ContentPart, InteractionStatus, PolicyDecided, RunStatus

from ..errors import BeamError
from ..models import AgentResult, NewMessage
from . import actions, states
from . import approval_events as events
from .approval_events import ApprovalEvent
from .step import Step

logger = logging.getLogger(__name__)
ActionRefusal = Callable[[ActionConflict], BeamError]


def refusal(error: StoreConflict | StoreBusy, on_action: ActionRefusal | None = None) -> BeamError:
    """The contract's code for a store's refusal of a step. `on_action` tells a resume why an action it
    resolves was not pending after all; elsewhere a conflict the checks before the write rule out (an
    action, a record that exists, a run closed by another) is raised as it is: the edge that answers
    makes it BEM-500 (riverbeam.aws.refusals)."""
    match error:
        case ActionConflict() if on_action is not None:
            return on_action(error)
        case SessionOwnedByOther():
            return BeamError("BEM-031", field="session_id")
        case SessionMissing():
            return BeamError("BEM-020", field="session_id")
        case InteractionMissing() | InteractionInOtherSession():
            # on invoke: not found (or not the caller's), never telling that it exists elsewhere
            return BeamError("BEM-022", field="interaction_id")
        case InteractionBusy():
            return BeamError("BEM-040", field="interaction_id")
        case StoreBusy():
            return BeamError("BEM-503")
    raise error


def too_large(error: ContentTooLarge) -> BeamError:
    """A step the store cannot keep (no content bucket takes its large content): BEM-002, the limit named."""
    return BeamError(
        "BEM-002",
        f"what the run would store is over the store's limit: {error.what} is {error.size} bytes as stored;"
        f" the limit is {error.limit} bytes without a content bucket",
    )


def commit(store: BeamStore, step: StepWrite, on_action: ActionRefusal | None = None) -> list[Message]:
    """Commit the whole step or nothing; a refusal is a BeamError."""
    try:
        return store.commit(step)
    except (StoreConflict, StoreBusy) as error:
        raise refusal(error, on_action) from None
    except ContentTooLarge as error:
        raise too_large(error) from None


def input_message(run: Run, content: Sequence[ContentPart], now: str) -> MessageDraft:
    return MessageDraft(
        message_id=new_id(),
        interaction_id=run.interaction_id,
        run_id=run.run_id,
        role="human",
        content=list(content),
        created_at=now,
    )


def _tool_message(action: Action, outcome: ToolOutcome | None) -> NewMessage:
    return NewMessage(
        role="tool",
        content=[
            ToolResultPart(
                tool_call_id=action.action_id,
                name=action.tool,
                status=outcome.status if outcome else "error",
                output=outcome.output if outcome else None,
                error=outcome.error if outcome else None,
            )
        ],
    )


def _ran(step: Step, result: AgentResult) -> list[Action]:
    """The resolved actions whose tools ran, with their outcomes: kept even when the run failed; one
    denied as it was to run is stored `denied`, its response by the policy then (CONTRACT 17)."""
    submitted = {a.action_id: a for a in step.resolved if a.status == "resolved"}
    denied = {c.action_id: c for c in result.denied_when_run}
    ran = []
    for action_id, outcome in result.tool_outcomes.items():
        if action_id not in submitted:
            continue
        action = submitted[action_id].model_copy(update={"outcome": outcome})
        call = denied.get(action_id)
        if call is not None and action.response is not None:
            by = PolicyDecided(policy_ids=list(call.decision.policy_ids), at="run")
            action = action.model_copy(
                update={"status": "denied", "response": action.response.model_copy(update={"by": by})}
            )
        ran.append(action)
    return ran


def _replies(step: Step, result: AgentResult, outcomes: list[Action], now: str) -> list[MessageDraft]:
    """The agent's messages, after a tool message for each outcome the agent did not answer itself."""
    messages = list(result.messages) or (
        [NewMessage(role="ai", content=result.content)] if result.content else []
    )
    answered = {p.tool_call_id for m in messages for p in m.content if isinstance(p, ToolResultPart)}
    missing = [_tool_message(a, a.outcome) for a in outcomes if a.action_id not in answered]
    return [
        MessageDraft(
            message_id=new_id(),
            interaction_id=step.interaction.interaction_id,
            run_id=step.run.run_id,
            role=m.role,
            type=m.type,
            content=m.content,
            created_at=now,
        )
        for m in missing + messages
    ]


def _closed_run(
    step: Step, result: AgentResult, failure: BeamError | None, now: str
) -> tuple[Run, InteractionStatus]:
    """The run as its closing write ends it, and its interaction's status then."""
    if failure is not None:
        error: ErrorInfo | None = ErrorInfo(code=failure.code, message=failure.message)
        run_status: RunStatus = "failed"
        interaction_status: InteractionStatus = "failed"
    else:
        error = None
        run_status = "interrupted" if result.interrupted else "completed"
        interaction_status = "in_progress" if result.interrupted else "completed"
    update = {"status": run_status, "error": error, "updated_at": now, "ended_at": now, "usage": result.usage}
    return step.run.model_copy(update=update), interaction_status


def close(
    store: BeamStore,
    step: Step,
    result: AgentResult,
    failure: BeamError | None,
    *,
    frames: list[dict[str, Any]] | None = None,
    now: str,
    frames_expire_at: int = 0,
    asked: Sequence[Action] = (),
    waiting: Collection[str] = (),
) -> list[ApprovalEvent]:
    """The step's closing write: the run ends `interrupted`, `completed` or (with `failure`) `failed`.
    Only a run that ended well opens actions; each is an `Approval Requested` event in the same write
    (but those `waiting`, asked for by an earlier run), returned once written. What its tools did, and
    the calls decided without asking (Actions resolved or denied, each an `Approval Decided` event), are
    kept whatever the end."""
    closed, interaction_status = _closed_run(step, result, failure, now)
    outcomes = _ran(step, result)
    opened = list(asked) if failure is None else []
    requested = events.approval_events(events.REQUESTED, [a for a in opened if a.action_id not in waiting])
    decided = actions.decided(step, result, now)
    told = requested + events.approval_events(events.DECIDED, decided)
    state_op, state = states.closing(step.runner, result, failure is not None)
    commit(
        store,
        StepWrite(
            session=step.session,
            session_op="update",
            interaction=step.interaction.model_copy(update={"status": interaction_status}),
            interaction_op="release",
            run=closed,
            run_op="close",
            messages=_replies(step, result, outcomes, now),
            open_actions=opened + decided,
            record_outcomes=outcomes,
            touch_last_active=True,
            frames=frames or [],
            frames_expire_at=frames_expire_at,
            outbox=events.outbox(told),
            state=state,
            state_op=state_op,
        ),
    )
    step.run = closed
    return told


@functools.cache
def unknown_outcome() -> ToolOutcome:
    """Made by the first run closed with tools of unknown outcome, not at import (building its two models'
    validators costs every handler that imports the writes some milliseconds)."""
    return ToolOutcome(
        status="error",
        error=ErrorInfo(code="BEM-334", message="outcome unknown: the worker stopped while the tool ran"),
    )


def close_failed(
    store: BeamStore,
    opened: tuple[Session, Interaction, Run],
    failure: BeamError,
    open_tools: list[Action],
    now: str,
    *,
    frames: list[dict[str, Any]],
    frames_expire_at: int,
) -> None:
    """Close `failed` a run that cannot go on (no agent ran in this process): the tools it may have run,
    `open_tools`, get an unknown outcome, and a tool message each; they are never run again."""
    session, interaction, run = opened
    outcome = unknown_outcome()
    unknown = [a.model_copy(update={"outcome": outcome}) for a in open_tools]
    messages = [
        MessageDraft(
            message_id=new_id(),
            interaction_id=interaction.interaction_id,
            run_id=run.run_id,
            role="tool",
            created_at=now,
            content=_tool_message(a, outcome).content,
        )
        for a in unknown
    ]
    lost = ErrorInfo(code=failure.code, message=failure.message)
    commit(
        store,
        StepWrite(
            session=session,
            session_op="update",
            interaction=interaction,
            interaction_op="release",
            run=run.model_copy(
                update={"status": "failed", "error": lost, "updated_at": now, "ended_at": now}
            ),
            run_op="close",
            messages=messages,
            record_outcomes=unknown,
            touch_last_active=True,
            frames=frames,
            frames_expire_at=frames_expire_at,
            # a runner's pause no longer fits what happened (states.py); none kept: nothing to drop
            state_op="delete",
        ),
    )

"""One pipeline step's writes, which a store commits all together or not at all."""

from __future__ import annotations

from typing import Any, Literal, NamedTuple

from .outbox import OutboxEvent
from .records import Action, ContentPart, Grant, Interaction, Message, MessageRole, MessageType, Run, Session


class MessageDraft(NamedTuple):
    """A message before the store gives it its `seq` (a NamedTuple, not a frozen dataclass: see StepWrite)."""

    message_id: str
    interaction_id: str
    run_id: str
    role: MessageRole
    content: list[ContentPart]
    created_at: str
    type: MessageType = "message"


class StepWrite:
    """Everything one step writes.

    session_op: "create" puts a new session (it must not exist; if it appeared meanwhile and has the same
    owner, the step goes on as "update"); "update" requires the same owner.
    interaction_op: "create" puts the interaction locked to `run`; "acquire" requires it to exist in the
    session with no run in progress, then locks it to `run`; "release" requires the lock to be `run`'s and
    frees it, storing `interaction.status`.
    run_op: "create" puts a new run; "close" requires it still `running`.
    resolve_actions: each must still be pending, in `interaction` and `session`.
    open_actions: new pending actions (one already pending in the same interaction is left as it is).
    record_outcomes: each must be resolved by `run` and have no outcome yet; one given `denied` (with its
    response) was denied as it was to run, and is stored so.
    tell_expired: each must be expired and not told yet (no resolved_run_id): `run` tells the agent.
    frames: written as `append_frames` would, in the same write.
    outbox: the events the step publishes (outbox.py), kept in the same write.
    add_grants: standing grants put on the session (a resume's approval that grants), in the same write.
    state_op: "put" keeps `state` (any JSON value) as the interaction's state, "delete" removes it, None
    leaves it as it is: what a runner of another framework keeps while its run waits (get_state).

    A plain class, not a data class: one costs every cold start a millisecond or more to make.
    """

    def __init__(
        self,
        *,
        session: Session,
        session_op: Literal["create", "update"],
        interaction: Interaction,
        interaction_op: Literal["create", "acquire", "release"],
        run: Run,
        run_op: Literal["create", "close"],
        messages: list[MessageDraft] | None = None,
        resolve_actions: list[Action] | None = None,
        open_actions: list[Action] | None = None,
        record_outcomes: list[Action] | None = None,
        tell_expired: list[Action] | None = None,
        touch_last_active: bool = False,
        frames: list[dict[str, Any]] | None = None,
        frames_expire_at: int = 0,
        outbox: list[OutboxEvent] | None = None,
        add_grants: list[Grant] | None = None,
        state: Any = None,
        state_op: Literal["put", "delete"] | None = None,
    ) -> None:
        self.session, self.session_op = session, session_op
        self.interaction, self.interaction_op = interaction, interaction_op
        self.run, self.run_op = run, run_op
        self.messages: list[MessageDraft] = messages if messages is not None else []
        self.resolve_actions: list[Action] = resolve_actions if resolve_actions is not None else []
        self.open_actions: list[Action] = open_actions if open_actions is not None else []
        self.record_outcomes: list[Action] = record_outcomes if record_outcomes is not None else []
        self.tell_expired: list[Action] = tell_expired if tell_expired is not None else []
        self.touch_last_active = touch_last_active
        # frames of the run (JSON objects with their frame_seq) kept with the step, until frames_expire_at
        self.frames: list[dict[str, Any]] = frames if frames is not None else []
        self.frames_expire_at = frames_expire_at
        self.outbox: list[OutboxEvent] = outbox if outbox is not None else []
        self.add_grants: list[Grant] = add_grants if add_grants is not None else []
        self.state, self.state_op = state, state_op


def numbered(step: StepWrite, after_seq: int) -> list[Message]:
    """The step's messages as stored: numbered after `after_seq`, the session's counter before the step."""
    return [
        Message(
            message_id=d.message_id,
            session_id=step.session.session_id,
            interaction_id=d.interaction_id,
            run_id=d.run_id,
            seq=after_seq + i,
            role=d.role,
            type=d.type,
            content=list(d.content),
            created_at=d.created_at,
            updated_at=d.created_at,
        )
        for i, d in enumerate(step.messages, start=1)
    ]


def opened_after(step: StepWrite, opened: dict[str, int], first_seq: int) -> dict[str, int]:
    """The session's interactions in progress once `step` is written (`opened`: before it). An interaction
    a step creates, or takes up again after it ended, is in progress from `first_seq` (the seq of the
    step's first message); one a run leaves completed or failed is no longer."""
    interaction_id = step.interaction.interaction_id
    if step.interaction_op in ("create", "acquire"):
        return {**opened, interaction_id: opened.get(interaction_id, first_seq)}
    if step.interaction.status == "in_progress":
        return dict(opened)
    return {k: v for k, v in opened.items() if k != interaction_id}

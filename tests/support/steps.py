"""Build the StepWrites the pipeline would send, for testing stores directly."""

from __future__ import annotations

from typing import Literal

from beam_store import (
    Action,
    Interaction,
    MessageDraft,
    Run,
    Session,
    StepWrite,
    TextPart,
    new_id,
    utc_now,
)


def session(session_id: str, user_id: str = "u1", last_seq: int = 0) -> Session:
    now = utc_now()
    return Session(
        session_id=session_id,
        user_id=user_id,
        profile_id="p1",
        last_seq=last_seq,
        created_at=now,
        updated_at=now,
    )


def interaction(session_id: str, interaction_id: str | None = None) -> Interaction:
    now = utc_now()
    return Interaction(
        interaction_id=interaction_id or new_id(),
        session_id=session_id,
        agent_name="author",
        status="in_progress",
        created_at=now,
        updated_at=now,
    )


def run(inter: Interaction, status: Literal["running", "completed", "interrupted"] = "running") -> Run:
    now = utc_now()
    return Run(
        run_id=new_id(),
        session_id=inter.session_id,
        interaction_id=inter.interaction_id,
        agent_name="author",
        agent_id="a",
        status=status,
        created_at=now,
        updated_at=now,
    )


def draft(inter: Interaction, r: Run, text: str, role: Literal["human", "ai"] = "human") -> MessageDraft:
    return MessageDraft(
        message_id=new_id(),
        interaction_id=inter.interaction_id,
        run_id=r.run_id,
        role=role,
        content=[TextPart(text=text)],
        created_at=utc_now(),
    )


def pending_action(
    inter: Interaction, r: Run, user_id: str = "u1", args: dict[str, object] | None = None
) -> Action:
    now = utc_now()
    return Action(
        action_id=new_id(),
        session_id=inter.session_id,
        interaction_id=inter.interaction_id,
        run_id=r.run_id,
        user_id=user_id,
        agent_name="author",
        tool="git_push",
        args=args if args is not None else {"ref": "docs/update"},
        status="pending",
        created_at=now,
        updated_at=now,
    )


def begin(
    sess: Session,
    inter: Interaction,
    *,
    create_session: bool = True,
    create_interaction: bool = True,
    texts: tuple[str, ...] = ("hello",),
) -> tuple[StepWrite, Run]:
    r = run(inter)
    return StepWrite(
        session=sess,
        session_op="create" if create_session else "update",
        interaction=inter,
        interaction_op="create" if create_interaction else "acquire",
        run=r,
        run_op="create",
        messages=[draft(inter, r, t) for t in texts],
    ), r


def close(
    sess: Session,
    inter: Interaction,
    r: Run,
    *,
    interrupted_with: list[Action] | None = None,
    texts: tuple[str, ...] = ("done",),
) -> StepWrite:
    status: Literal["interrupted", "completed"] = "interrupted" if interrupted_with else "completed"
    closed = r.model_copy(update={"status": status, "updated_at": utc_now(), "ended_at": utc_now()})
    return StepWrite(
        session=sess,
        session_op="update",
        interaction=inter.model_copy(update={"status": "in_progress" if interrupted_with else "completed"}),
        interaction_op="release",
        run=closed,
        run_op="close",
        messages=[draft(inter, r, t, role="ai") for t in texts],
        open_actions=interrupted_with or [],
        touch_last_active=True,
    )

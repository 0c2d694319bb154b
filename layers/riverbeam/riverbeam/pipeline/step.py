"""One pass through the pipeline: what an opened step knows about itself, and the records it starts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from beam_store import Action, Interaction, Message, Run, Session, TextPart, new_id
from beam_store.records import ContentPart, InteractionStatus

from ..models import AgentResult, AuthContext, RunJob

if TYPE_CHECKING:  # a WebSocket connect (new_session) imports no agent interface
    from ..agent.registry import AgentRunner


class Step:
    """A step whose opening write is done: its run is `running` and holds the interaction. A plain class,
    not a data class: one costs every cold start (a read's too, which imports this module) a millisecond
    or more to make."""

    def __init__(
        self,
        *,
        session: Session,
        interaction: Interaction,
        run: Run,
        kind: Literal["invoke", "resume"],
        runner: AgentRunner,
        history: list[Message],
        content: list[ContentPart],
        resolved: list[Action] | None = None,
        frames_kept: int = -1,
        groups: Sequence[str] = (),
    ) -> None:
        self.session, self.interaction, self.run, self.kind = session, interaction, run, kind
        self.runner, self.history, self.content = runner, history, content
        self.resolved: list[Action] = resolved if resolved is not None else []
        # the run's frames the opening write already stored, through this frame_seq (-1: none)
        self.frames_kept = frames_kept
        # the requester's groups (the principal's parents in the agent's approval policy): the session
        # owner's, as their last request to the interaction gave them, never an approver's
        self.groups = tuple(groups)

    def job(self) -> RunJob:
        return RunJob(
            kind=self.kind,
            agent_name=self.run.agent_name,
            session_id=self.session.session_id,
            interaction_id=self.interaction.interaction_id,
            run_id=self.run.run_id,
            content=[p for p in self.content if isinstance(p, TextPart)],
            action_ids=[a.action_id for a in self.resolved],
            groups=list(self.groups),
        )

    def ids(self) -> dict[str, str]:
        """The step's ids, as its log lines carry them."""
        return {
            "session_id": self.session.session_id,
            "interaction_id": self.interaction.interaction_id,
            "run_id": self.run.run_id,
        }

    def result(self, result: AgentResult) -> AgentResult:
        """The runner's result as the Result of this step, with its ids."""
        return result.model_copy(update={"agent_name": self.run.agent_name, **self.ids()})


def new_session(session_id: str, user: AuthContext, now: str) -> Session:
    """A session as its first request (or its first subscriber) creates it: the user's from then on."""
    return Session(
        session_id=session_id,
        user_id=user.user_id,
        profile_id=user.profile_id,
        created_at=now,
        updated_at=now,
    )


def interaction_ref(
    interaction_id: str,
    session_id: str,
    agent_name: str,
    status: InteractionStatus,
    now: str,
    requester_groups: Sequence[str] | None = None,
) -> Interaction:
    """The interaction as a step writes it: the store takes its id, session and status (and, on create,
    the rest; on acquire, the requester's groups where given: a request of the session's owner); it never
    reads it first."""
    return Interaction(
        interaction_id=interaction_id,
        session_id=session_id,
        agent_name=agent_name,
        status=status,
        requester_groups=list(requester_groups) if requester_groups is not None else None,
        created_at=now,
        updated_at=now,
    )


def new_run(interaction: Interaction, agent_name: str, now: str, run_id: str | None = None) -> Run:
    from ..agent.registry import agent_id_for

    return Run(
        run_id=run_id or new_id(),
        session_id=interaction.session_id,
        interaction_id=interaction.interaction_id,
        agent_name=agent_name,
        agent_id=agent_id_for(agent_name),
        status="running",
        created_at=now,
        updated_at=now,
    )


def after(session: Session, written: list[Message]) -> Session:
    """The session as the step left it, so the next write expects the right message counter."""
    return session.model_copy(update={"last_seq": written[-1].seq}) if written else session

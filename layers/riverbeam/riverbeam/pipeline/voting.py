"""Who may answer an action and the votes of a quorum (CONTRACT 11), between the resume checks and the
write that resolves. accept.py calls them in this order:

    owner_or_approver   BEM-020; a caller who is not the session's owner goes on as an approver
    require_approver    BEM-031 unless the caller may answer every action named (by id or by group),
                        and sends no message: an approver answers, and does nothing else in the session
    vote_refusal        BEM-090 the requester's approval where four eyes rule it out, BEM-091 a second vote,
                        BEM-092 edited args where more than one approval is needed
    counted             each action as the caller's vote leaves it: resolved, cancelled, or still pending
                        with one vote more
    record_votes        a resume whose answers only add votes: one conditional write, no run (VoteAck)

A vote is written on the votes it was read with, so two approvers voting at once cannot both count on the
same tally: the write that loses is told the action moved (VotesMoved), and the resume is decided again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from beam_store import Action, ActionConflict, Session
from beam_store.approvers import may_approve, required, tally, with_vote
from beam_store.records import Approvals, overdue

from ..errors import BeamError
from ..models import ActionResponseEnvelope, PendingVotes, ResumeRequest, VoteAck

if TYPE_CHECKING:
    from ..agent.registry import AgentRunner
    from .setup import Setup

# how many times a resume is decided again when other votes are written while it decides
MAX_RECOUNTS = 8


class VotesMoved(Exception):
    """Another vote (or answer) was written on an action since this resume read it."""


def tool_approvals(setup: Setup, agent_name: str, runner: AgentRunner, tool: str) -> Approvals | None:
    """Who may answer `tool`'s actions: what `register_agent(approvals=)` says, else the tool's own
    setting (agents.yaml's tool_settings); None: the session's owner alone."""
    registered = setup.approvals.get(agent_name, {}).get(tool)
    if registered is not None:
        return registered
    made = getattr(runner, "tools", {}).get(tool)
    approvals = getattr(made, "approvals", None)
    return approvals if isinstance(approvals, Approvals) else None


def owner_or_approver(session: Session | None, session_id: str, user_id: str) -> tuple[Session, bool]:
    """The session a resume continues (BEM-020 where it does not exist), and whether the caller answers
    as an approver rather than as its owner."""
    if session is None:
        raise BeamError("BEM-020", f"session {session_id} not found", field="session_id")
    return session, session.user_id != user_id


def require_approver(
    found: Mapping[str, Action | None], req: ResumeRequest, groups: Sequence[str] = ()
) -> None:
    """BEM-031 (the session is another user's) unless the caller may answer every action the resume
    names, and sends no message of their own."""
    user_id, session_id = req.auth_context.user_id, str(req.session_id)
    answerable = all(
        a is not None and a.session_id == session_id and may_approve(a, user_id, groups)
        for a in found.values()
    )
    if not answerable or req.content:
        raise BeamError("BEM-031", field="session_id")


def vote_refusal(
    found: Mapping[str, Action | None], responses: Mapping[str, ActionResponseEnvelope], user_id: str
) -> BeamError | None:
    """The first answer the action's approvers refuse: four eyes, a second vote, an edit of a quorum."""
    for action_id, envelope in responses.items():
        action = found.get(action_id)
        if action is None or action.approvals is None:
            continue
        own = action.user_id == user_id and envelope.status == "submitted"
        if own and not action.approvals.self_approval:  # the requester may still withdraw it
            return BeamError(
                "BEM-090", f"action {action_id} needs another person's approval", field="auth_context.user_id"
            )
        if any(v.user_id == user_id for v in action.votes):
            return BeamError(
                "BEM-091", f"{user_id} has voted on action {action_id}", field="actions.action_id"
            )
        if envelope.edited_args is not None and required(action) > 1:
            return BeamError(
                "BEM-092",
                f"action {action_id} needs {required(action)} approvals: its args cannot be edited",
                field="actions.edited_args",
            )
    return None


def counted(
    resolved: Sequence[Action], found: Mapping[str, Action | None], user_id: str, now: str
) -> list[Action]:
    """Each action as this resume leaves it (checks.resolve made them resolved or cancelled): one that
    names approvers gets the caller's vote, and is resolved only where the votes reach its quorum (one
    refusal cancels it); else it stays pending with the vote added."""
    counted_ = []
    for action in resolved:
        stored, response = found[action.action_id], action.response
        assert stored is not None and response is not None
        if stored.approvals is None:
            counted_.append(action)
            continue
        voted = with_vote(stored, user_id, response.status, now, response.reason)
        if tally(voted.votes, required(stored)) == "pending":
            counted_.append(voted)
        else:
            votes = response.model_copy(update={"votes": voted.votes})
            counted_.append(action.model_copy(update={"votes": voted.votes, "response": votes}))
    return counted_


def record_votes(setup: Setup, voted: Sequence[Action], req: ResumeRequest, now: str) -> VoteAck:
    """Votes that resolve nothing, in one conditional write; the answer says what each action has."""
    try:
        setup.store.add_votes(voted, now)
    except ActionConflict as conflict:
        raise moved_or_refused(conflict, now) from None
    pending = [PendingVotes(action_id=a.action_id, votes=a.votes, required=required(a)) for a in voted]
    return VoteAck(session_id=str(req.session_id), interaction_id=str(req.interaction_id), pending=pending)


def moved_or_refused(conflict: ActionConflict, now: str) -> Exception:
    """What a lost vote means: the action still waits (another vote came first: decide again), or it is
    no longer pending (BEM-066), or its time is past (BEM-070)."""
    current = conflict.current
    if current is not None and current.status == "pending" and not overdue(current, now):
        return VotesMoved(conflict.action_id)
    if current is not None and current.status == "pending":
        return BeamError(
            "BEM-070", f"action {conflict.action_id} expired unanswered", field="actions.action_id"
        )
    status = current.status if current is not None else "gone"
    return BeamError(
        "BEM-066", f"action {conflict.action_id} is {status}, not pending", field="actions.action_id"
    )

"""Invoke and resume up to their opening write: every check that can fail fast, then one atomic write
that opens the step (a resume's resolution of its actions included). What comes back is an opened Step,
run here (execute.py) or by a worker (jobs.py)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Literal, NamedTuple

from beam_store import Action, ActionConflict, Grant, Message, Session, StepWrite, new_id

from ..agent.registry import AgentRunner
from ..errors import BeamError
from ..models import ActionResponseEnvelope, InvokeRequest, ResumeHead, ResumeRequest, RunJob, VoteAck
from ..policy.decision import Decision
from ..policy.moments import now_context
from . import approval_events as events
from . import checks, expiry, grants, intake, retries, voting, writes
from .frames import started_frame
from .history import read as read_conversation
from .setup import Setup
from .step import Step, after, interaction_ref, new_run, new_session

logger = logging.getLogger(__name__)


def _read(
    setup: Setup,
    ids: tuple[str, str],
    runner: AgentRunner,
    with_history: bool,
    *,
    whole_if_cut: bool = True,
) -> tuple[Session | None, list[Message]]:
    """The session, whose owner is checked on it; and, for a step whose agent runs in this process, the
    conversation it is given for a step of the interaction (`ids`: session, interaction; history.py). A
    step a worker runs reads the session item alone here: the worker reads the conversation."""
    session_id, interaction_id = ids
    if with_history:
        return read_conversation(setup.store, session_id, interaction_id, runner, whole_if_cut=whole_if_cut)
    return setup.store.get_session(session_id), []


def open_invoke(
    setup: Setup,
    req: InvokeRequest,
    *,
    run_id: str | None = None,
    new_interaction_id: str | None = None,
    with_history: bool = False,
) -> Step:
    """The session (created on first use, else the caller's), the interaction (new, or the one named,
    free), the run, and the input message, in one write."""
    runner = setup.runner(req.agent_name)
    session_id, user = str(req.session_id), req.auth_context
    interaction_id = str(req.interaction_id) if req.interaction_id else new_interaction_id or new_id()
    # a window without a person's message is dropped: this invoke's input starts the conversation
    session, history = _read(setup, (session_id, interaction_id), runner, with_history, whole_if_cut=False)
    checks.refuse_other_owner(session, user.user_id)
    now = setup.now()
    session_op: Literal["create", "update"] = "update" if session is not None else "create"
    if session is None:
        session = new_session(session_id, user, now)
    groups = user.groups  # the owner's own request: the interaction's runs decide with these
    interaction = interaction_ref(interaction_id, session_id, req.agent_name, "in_progress", now, groups)
    run = new_run(interaction, req.agent_name, now, run_id)
    # the interaction's actions read once: checked to be in this session (the caller's), then expired
    ids = (interaction_id, session_id, run.run_id)
    told, telling = expiry.untold(setup, ids, now) if req.interaction_id else ([], [])
    opening = StepWrite(
        session=session,
        session_op=session_op,
        interaction=interaction,
        interaction_op="acquire" if req.interaction_id else "create",
        run=run,
        run_op="create",
        messages=[*telling, writes.input_message(run, req.content, now)],
        tell_expired=told,
    )
    written = writes.commit(setup.store, opening, on_action=expiry.busy)
    return Step(
        session=after(session, written),
        interaction=interaction,
        run=run,
        kind="invoke",
        runner=runner,
        history=history + written,
        content=list(req.content),
        groups=groups,
    )


class _Resuming(NamedTuple):
    req: ResumeRequest
    runner: AgentRunner
    session: Session
    history: list[Message]
    # the caller answers as one of the actions' approvers, not as the session's owner (voting.py)
    approver: bool


def _checked_resume(
    setup: Setup, request: ResumeRequest | dict[str, Any] | str, with_history: bool
) -> _Resuming:
    """The request, checked in the contract's order up to what needs the actions: 062, the body's own
    BEM-001, the agent (021), the session's owner (020, 031), the action ids (063), then the rest of the
    body (BEM-001), so a specific code is never hidden behind the generic one."""
    body = intake.parse_body(
        request.model_dump(mode="json") if isinstance(request, ResumeRequest) else request
    )
    checks.require_interaction_id(body)
    head = intake.parse_request(ResumeHead, body)
    runner = setup.runner(head.agent_name)
    session_id = str(head.session_id)
    found, history = _read(setup, (session_id, str(head.interaction_id)), runner, with_history)
    session, approver = voting.owner_or_approver(found, session_id, head.auth_context.user_id)
    try:
        checks.require_uuid_action_ids(body)
        req = intake.parse_request(ResumeRequest, body)
    except BeamError:
        if approver:  # another's session: nothing told of it, nor of what was sent to it (CONTRACT 3.2)
            raise BeamError("BEM-031", field="session_id") from None
        raise
    return _Resuming(req, runner, session, history, approver)


def edit_rules(runner: AgentRunner) -> checks.EditRules:
    """What the runner says of edited args (agents.AgentRunner: its optional methods)."""
    editable, validate = getattr(runner, "editable", None), getattr(runner, "validate_args", None)
    return checks.EditRules(
        editable=editable if callable(editable) else checks.ANY_EDIT.editable,
        problems=validate if callable(validate) else checks.ANY_EDIT.problems,
    )


def edit_decider(
    setup: Setup, req: ResumeRequest, session: Session, groups: list[str]
) -> checks.Decide | None:
    """What decides an approver's edited args: the agent's policy, for the session's owner with the
    groups its run decides with, the requester's (None: the agent has no policy, the approver's answer
    stands)."""
    policy = setup.policies.get(req.agent_name)
    if policy is None:
        return None

    def decide(tool: str, args: dict[str, Any]) -> Decision:
        return policy.decide(
            tool=tool,
            args=args,
            user_id=session.user_id,
            groups=groups,
            agent=req.agent_name,
            confirm_required=True,
            session_id=session.session_id,
            now=now_context(setup.clock(), setup.timezones.get(req.agent_name, "UTC")),
        )

    return decide


def open_resume(
    setup: Setup, request: ResumeRequest | dict[str, Any] | str, *, with_history: bool = False
) -> Step | RunJob | VoteAck:
    """Every resume check, then the resolution of every action answered, with its messages, in the one
    conditional write that opens the step: of concurrent resumes of an action, exactly one wins. The
    write also keeps the run's `run_started` frame (a resume always streams, and runs its approved tools
    right after it: stored here, it needs no write of its own before them). A resume sent again (its
    request_ids answered these actions before: retries.py) opens nothing: the first one's job is
    returned, whether it is seen before the write or by the write it lost to the first. Answers that
    only add votes open nothing either (VoteAck); a vote written meanwhile has the resume decided again."""
    for _ in range(voting.MAX_RECOUNTS):
        try:
            return _resolving_step(setup, request, with_history)
        except retries.Replayed as replayed:
            return replayed.job
        except voting.VotesMoved:
            continue
    raise BeamError("BEM-503", "the action's votes kept changing; try again")


def _resolving_step(
    setup: Setup, request: ResumeRequest | dict[str, Any] | str, with_history: bool
) -> Step | VoteAck:
    req, runner, session, history, approver = _checked_resume(setup, request, with_history)
    responses = checks.responses_by_action(req)
    session_id, interaction_id, user = str(req.session_id), str(req.interaction_id), req.auth_context.user_id
    listed, found = _answered(setup, req, responses, approver)
    ids, now, sha256 = (interaction_id, session_id, user), setup.now(), retries.request_sha256(req)
    retries.resumed_before(req, found, responses, sha256, setup.clock())
    groups = _requester_groups(setup, req, approver)
    refused = checks.first_refusal(found, responses, req, edit_rules(runner), now)
    refused = refused or checks.edit_decision_refusal(found, req, edit_decider(setup, req, session, groups))
    refused = refused or voting.vote_refusal(found, responses, user)
    grantable = grants.grantable_tools(runner)
    refused = refused or grants.grant_refusal(found, responses, grantable, approver=approver)
    if refused is not None:
        raise expiry.settle_refusal(setup, found, refused, now, ids)
    kept = None if approver else groups  # an approver's resume keeps the requester's groups
    interaction = interaction_ref(interaction_id, session_id, req.agent_name, "in_progress", now, kept)
    run, frames_expire_at = new_run(interaction, req.agent_name, now), setup.frames_expire_at()
    resolution = checks.resolve(found, responses, run.run_id, user, now, sha256)
    counted = voting.counted(resolution, found, user, now)
    resolved = [a for a in counted if a.status != "pending"]  # the rest only got a vote
    if not resolved:
        return voting.record_votes(setup, counted, req, now)
    told, drafts = expiry.untold(setup, (interaction_id, session_id, run.run_id), now, listed)
    drafts += [writes.input_message(run, req.content, now)] if req.content else []
    drafts += [d for action in resolved for d in checks.resolution_messages(action, run.run_id, now)]
    lost, decided = _lost(setup, req, responses, (ids, now, sha256)), _decisions(resolved, now)
    granted = grants.made_grants(resolved, responses, user, now)
    opening = StepWrite(
        session=session,
        session_op="update",
        interaction=interaction,
        interaction_op="acquire",
        run=run,
        run_op="create",
        messages=drafts,
        resolve_actions=counted,
        tell_expired=told,
        frames=[started_frame(run, "resume")],
        frames_expire_at=frames_expire_at,
        outbox=events.outbox(decided),
        add_grants=granted,
    )
    written = writes.commit(setup.store, opening, on_action=lost)
    step = Step(
        session=with_grants(after(session, written), granted),
        interaction=interaction,
        run=run,
        kind="resume",
        runner=runner,
        history=history + written,
        content=list(req.content),
        resolved=resolved,
        frames_kept=0,
        groups=groups,
    )
    events.deliver(setup.events, decided)
    return _log_decided(step, resolved)


def _requester_groups(setup: Setup, req: ResumeRequest, approver: bool) -> list[str]:
    """The groups the resumed run decides with: the requester's, whoever resumes. The session's owner
    gives theirs; an approver's are never used: the interaction keeps the owner's (one GetItem). An
    interaction kept before it held them has none."""
    if not approver:
        return list(req.auth_context.groups)
    interaction = setup.store.get_interaction(str(req.interaction_id))
    kept = interaction.requester_groups if interaction is not None else None
    return list(kept) if kept is not None else []


def with_grants(session: Session, granted: list[Grant]) -> Session:
    """The session as the opening write leaves it: with the grants it made (its run decides by them)."""
    if not granted:
        return session
    return session.model_copy(update={"grants": {**session.grants, **{g.grant_id: g for g in granted}}})


def _lost(
    setup: Setup,
    req: ResumeRequest,
    responses: Mapping[str, ActionResponseEnvelope],
    at: tuple[tuple[str, str, str], str, str],
) -> writes.ActionRefusal:
    """What a resolution that lost its conditional write answers (`at`: the ids, now, the request's hash):
    another vote came first (VotesMoved: decided again), else why the action cannot be resolved."""
    ids, now, sha256 = at

    def lost(conflict: ActionConflict) -> BeamError:
        moved = voting.moved_or_refused(conflict, now)
        if isinstance(moved, voting.VotesMoved):
            raise moved
        if conflict.action_id in responses:  # resolved meanwhile, by the first where this is a retry
            answered = {conflict.action_id: responses[conflict.action_id]}
            current = {conflict.action_id: conflict.current}
            retries.resumed_before(req, current, answered, sha256, setup.clock())
        return expiry.lost_resolution(conflict, responses, ids, now)

    return lost


def _answered(
    setup: Setup, req: ResumeRequest, responses: Mapping[str, ActionResponseEnvelope], approver: bool
) -> tuple[list[Action], dict[str, Action | None]]:
    """The interaction's actions in one Query, and among them the ones answered (a GetItem for any not
    among them: another interaction's, or one the index has not caught up with; a stale copy loses the
    conditional write). An approver must be one of every action answered (voting.require_approver)."""
    listed = setup.store.list_actions(str(req.interaction_id))
    known = {a.action_id: a for a in listed}
    found = {action_id: known.get(action_id) or setup.store.get_action(action_id) for action_id in responses}
    if approver:
        voting.require_approver(found, req, req.auth_context.groups)
    return listed, found


def _decisions(resolved: list[Action], now: str) -> list[events.ApprovalEvent]:
    """The decisions as the opening write stores them (updated now), to be told in that write."""
    stored = [a.model_copy(update={"updated_at": now}) for a in resolved]
    return events.approval_events(events.DECIDED, stored)


def _log_decided(step: Step, resolved: list[Action]) -> Step:
    """The decisions the opening write stored: a log line each; the step."""
    for action in resolved:
        assert action.response is not None
        extra = {"action_id": action.action_id, "tool": action.tool, "response": action.response.status}
        logger.info("agent_resumed", extra=step.ids() | extra)
    return step

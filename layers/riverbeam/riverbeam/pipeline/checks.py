"""The resume checks of CONTRACT 3.2, in the contract's order, and the resolution they allow. Pure: no
store, no clock; what they need is read before and handed in.

The order a resume meets them (accept.open_resume calls them so):

    require_interaction_id   BEM-062  the body names the interaction it resumes
    require_owner            BEM-020, BEM-031  the session exists and is the caller's
    require_uuid_action_ids  BEM-063  every action_id is a UUID (before the rest of the body: BEM-001)
    responses_by_action      BEM-001  no action answered twice
    first_refusal            BEM-027, -064, -065, -066, -067 (tool, args, their hash), -068, then the
                                      edit: -071 (the tool forbids it), BEM-001 (the edited args do not fit
                                      the tool's schema); each check over every action before the next
                                      check
    edit_decision_refusal    BEM-081 (the policy denies the edited args), BEM-082 (it cannot read them)
    resolve                  the actions as the one conditional write stores them
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Literal, NamedTuple

from beam_store import (
    Action,
    ActionResponsePart,
    ActionResponseRecord,
    ErrorInfo,
    MessageDraft,
    Session,
    ToolResultPart,
    args_sha256,
    new_id,
)
from beam_store.records import PersonDecided, overdue

from ..errors import BeamError
from ..models import ActionResponseEnvelope, ResumeRequest
from ..policy.decision import UNREADABLE_CODE, Decision
from ..policy.values import UnfitArgs
from .intake import invalid, normal_uuid

# what decides a call: (tool, args) -> the agent's policy's decision for the session's owner
Decide = Callable[[str, dict[str, Any]], Decision]

# the codes of the checks on each action, in the order the contract gives them
CHECK_ORDER = ("BEM-027", "BEM-064", "BEM-065", "BEM-066", "BEM-067", "BEM-068")
# then what an approver's edit may fail: the tool forbids it, the edited args do not fit its schema
EDIT_CHECK_ORDER = ("BEM-071", "BEM-001")
# an action past its expires_at is answered BEM-070 (410) where BEM-066 would not already refuse it
RESOLVE_ORDER = (*CHECK_ORDER[:4], "BEM-070", *CHECK_ORDER[4:], *EDIT_CHECK_ORDER)


class EditRules(NamedTuple):
    """What the agent says of edited args: whether a tool allows them, and what is wrong with them
    against the tool's schema ((field, problem) pairs). By default any JSON object goes. A NamedTuple
    rather than a frozen data class: as immutable, and made at import for a fraction of the cost."""

    editable: Callable[[str], bool] = lambda tool: True
    problems: Callable[[str, dict[str, Any]], Sequence[tuple[str, str]]] = lambda tool, args: ()


ANY_EDIT = EditRules()


def is_uuid(value: object) -> bool:
    return isinstance(value, str) and normal_uuid(value) is not None


def same_json(a: Any, b: Any) -> bool:
    """JSON values equal in type and value: `true` is not `1` (Python says it is), nor `"1"`; numbers
    compare by value (`1` equals `1.0`, as JSON does not tell them apart)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_json(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def require_interaction_id(body: Mapping[str, Any]) -> None:
    if not body.get("interaction_id"):
        raise BeamError("BEM-062", "resume needs the interaction_id it resumes", field="interaction_id")


def require_owner(session: Session | None, session_id: str, user_id: str) -> Session:
    """The session a resume continues: it must exist (BEM-020) and be the caller's (BEM-031)."""
    if session is None:
        raise BeamError("BEM-020", f"session {session_id} not found", field="session_id")
    refuse_other_owner(session, user_id)
    return session


def refuse_other_owner(session: Session | None, user_id: str) -> None:
    """A session that exists belongs to its creator: anyone else is BEM-031 (invoke and resume)."""
    if session is not None and session.user_id != user_id:
        raise BeamError("BEM-031", field="session_id")


def require_uuid_action_ids(body: Mapping[str, Any]) -> None:
    """Checked on the raw body, so that a malformed id is BEM-063 rather than the generic BEM-001."""
    raw_actions = body.get("actions")
    for i, raw in enumerate(raw_actions if isinstance(raw_actions, list) else []):
        if isinstance(raw, dict) and "action_id" in raw and not is_uuid(raw["action_id"]):
            raise BeamError(
                "BEM-063", f"actions[{i}].action_id is not a UUID", field=f"actions.{i}.action_id"
            )


def responses_by_action(req: ResumeRequest) -> dict[str, ActionResponseEnvelope]:
    """Each response under its action's id, normalised; an action answered twice is BEM-001."""
    responses: dict[str, ActionResponseEnvelope] = {}
    for i, envelope in enumerate(req.actions):
        action_id = normal_uuid(envelope.action_id) or envelope.action_id  # checked before (BEM-063)
        if action_id in responses:
            raise BeamError(
                "BEM-001",
                f"invalid request: actions.{i}.action_id: answered twice",
                field=f"actions.{i}.action_id",
            )
        responses[action_id] = envelope
    return responses


def action_refusal(
    action_id: str, current: Action | None, interaction_id: str, session_id: str, user_id: str
) -> BeamError | None:
    """Why `current` cannot be resolved by this resume, in the contract's order; None if it can. Also
    what a resolution that lost the conditional write is told, from the action it found."""
    where = "actions.action_id"
    if current is None or (current.session_id != session_id and current.user_id != user_id):
        return BeamError("BEM-027", f"action {action_id} not found", field=where)
    if current.interaction_id != interaction_id:
        return BeamError("BEM-064", f"action {action_id} belongs to another interaction", field=where)
    if current.session_id != session_id:
        return BeamError(
            "BEM-065", f"interaction {interaction_id} belongs to another session", field="interaction_id"
        )
    if current.status == "expired":
        return expired(action_id, current)
    if current.status != "pending":
        return BeamError("BEM-066", f"action {action_id} is {current.status}, not pending", field=where)
    return None


def expired(action_id: str, action: Action) -> BeamError:
    return BeamError(
        "BEM-070", f"action {action_id} expired at {action.expires_at} unanswered", field="actions.action_id"
    )


def payload_refusal(action_id: str, stored: Action, envelope: ActionResponseEnvelope) -> BeamError | None:
    """BEM-067 where the response names another tool, other args, or another hash of the args than the
    action stored: what the approver saw is not what would run."""
    if envelope.payload is not None and not (
        envelope.payload.tool == stored.tool and same_json(envelope.payload.args, stored.args)
    ):
        return BeamError(
            "BEM-067",
            f"action {action_id} asks for {stored.tool} with other args than the response names",
            field="actions.payload",
        )
    if envelope.args_sha256 is not None and envelope.args_sha256.lower() != stored.args_sha256:
        return BeamError(
            "BEM-067",
            f"action {action_id}: its args hash to {stored.args_sha256}, not to the args_sha256 answered",
            field="actions.args_sha256",
        )
    return None


def edit_refusal(
    stored: Action, envelope: ActionResponseEnvelope, index: int, rules: EditRules
) -> BeamError | None:
    """Edited args where the tool forbids editing (BEM-071), or that do not fit its schema (BEM-001,
    naming the field: `actions.0.edited_args.ref`)."""
    if envelope.edited_args is None:
        return None
    where = f"actions.{index}.edited_args"
    if not rules.editable(stored.tool):
        return BeamError("BEM-071", f"{stored.tool} runs only with the args it asked for", field=where)
    problems = list(rules.problems(stored.tool, envelope.edited_args))
    return invalid([(f"{where}.{f}" if f else where, p) for f, p in problems]) if problems else None


def response_refusal(
    action_id: str,
    stored: Action | None,
    envelope: ActionResponseEnvelope,
    req: ResumeRequest,
    rules: EditRules = ANY_EDIT,
    now: str | None = None,
) -> BeamError | None:
    """The first check this response fails, in the contract's order; None if it can resolve the action.
    At `now`, a pending action past its `expires_at` is BEM-070."""
    interaction_id, session_id = str(req.interaction_id), str(req.session_id)
    error = action_refusal(action_id, stored, interaction_id, session_id, req.auth_context.user_id)
    if error is not None or stored is None:
        return error
    if now is not None and overdue(stored, now):
        return expired(action_id, stored)
    error = payload_refusal(action_id, stored, envelope)
    if error is not None:
        return error
    if stored.agent_name != req.agent_name:
        return BeamError(
            "BEM-068", f"action {action_id} was requested by agent {stored.agent_name!r}", field="agent_name"
        )
    index = next((i for i, e in enumerate(req.actions) if e is envelope), 0)
    return edit_refusal(stored, envelope, index, rules)


def first_refusal(
    found: Mapping[str, Action | None],
    responses: Mapping[str, ActionResponseEnvelope],
    req: ResumeRequest,
    rules: EditRules = ANY_EDIT,
    now: str | None = None,
) -> BeamError | None:
    """The refusal of the whole resume: each check over every action before the next check."""
    failures = [response_refusal(a, found.get(a), e, req, rules, now) for a, e in responses.items()]
    refused = [f for f in failures if f is not None]
    return min(refused, key=lambda f: RESOLVE_ORDER.index(f.code), default=None)


def edit_decision_refusal(
    found: Mapping[str, Action | None], req: ResumeRequest, decide: Decide | None
) -> BeamError | None:
    """Edited args are decided as the call they become: where the policy denies them (a forbid covers
    them, or `run` is not permitted) the resume is BEM-081 naming the policies; where they hold a number
    the policy cannot read, BEM-082 naming the field. Otherwise the approver's answer stands for them."""
    if decide is None:
        return None
    for index, envelope in enumerate(req.actions):
        stored = found.get(normal_uuid(envelope.action_id) or envelope.action_id)
        if envelope.edited_args is None or stored is None or envelope.status != "submitted":
            continue
        where = f"actions.{index}.edited_args"
        try:
            decision = decide(stored.tool, envelope.edited_args)
        except UnfitArgs as error:
            field = where + error.field.removeprefix("args")
            return BeamError(UNREADABLE_CODE, f"{field}: {error.problem}", field=field)
        if decision.effect == "deny":
            named = ", ".join(decision.policy_ids) or "no policy permits them"
            told = f"the approval policy denies {stored.tool} with these edited args ({named})"
            return BeamError("BEM-081", told, field=where)
    return None


def resolve(
    found: Mapping[str, Action | None],
    responses: Mapping[str, ActionResponseEnvelope],
    run_id: str,
    user_id: str,
    now: str,
    request_sha256: str | None = None,
) -> list[Action]:
    """The actions as this resume resolves them (checked first: every one found and pending); each
    response keeps the hash of the resume (`request_sha256`), so that a retry of it is recognised."""
    resolved = []
    for action_id, envelope in responses.items():
        stored = found[action_id]
        assert stored is not None
        edited = envelope.edited_args
        response = ActionResponseRecord(
            status=envelope.status,
            request_id=str(envelope.request_id),
            who=user_id,
            when=now,
            reason=envelope.reason,
            args_sha256=envelope.args_sha256,
            edited_args=edited,
            edited_args_sha256=args_sha256(edited) if edited is not None else None,
            request_sha256=request_sha256,
            by=PersonDecided(user_id=user_id),
        )
        changes: dict[str, Any] = {"status": "cancelled", "response": response, "resolved_run_id": run_id}
        if envelope.status == "submitted":
            run_args = edited if edited is not None else stored.args
            changes |= {"status": "resolved", "run_args": run_args, "run_args_sha256": args_sha256(run_args)}
        resolved.append(stored.model_copy(update=changes))
    return resolved


def resolution_messages(action: Action, run_id: str, now: str) -> Iterator[MessageDraft]:
    """The `action_result` message of a resolution and, for a cancelled action, the tool's refusal."""
    response = action.response
    assert response is not None
    yield MessageDraft(
        message_id=new_id(),
        interaction_id=action.interaction_id,
        run_id=run_id,
        role="human",
        type="action_result",
        created_at=now,
        content=[
            ActionResponsePart(
                action_id=action.action_id,
                status=response.status,
                reason=response.reason,
                edited_args=response.edited_args,
            )
        ],
    )
    if response.status == "cancelled":
        refusal = f"{response.who} refused to run {action.tool}" + (
            f": {response.reason}" if response.reason else ""
        )
        yield _not_run(action, run_id, now, "refused", ErrorInfo(code="BEM-069", message=refusal))


def expiry_message(action: Action, run_id: str, now: str) -> MessageDraft:
    """The tool message that tells the agent its action expired unanswered (the tool did not run)."""
    unanswered = f"nobody answered before {action.expires_at}: {action.tool} did not run"
    return _not_run(action, run_id, now, "error", ErrorInfo(code="BEM-070", message=unanswered))


def _not_run(
    action: Action, run_id: str, now: str, status: Literal["refused", "error"], error: ErrorInfo
) -> MessageDraft:
    """The tool message of an action whose tool did not run, and why."""
    return MessageDraft(
        message_id=new_id(),
        interaction_id=action.interaction_id,
        run_id=run_id,
        role="tool",
        created_at=now,
        content=[ToolResultPart(tool_call_id=action.action_id, name=action.tool, status=status, error=error)],
    )

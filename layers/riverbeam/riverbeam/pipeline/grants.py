"""Standing grants ("always allow", CONTRACT 10): an approval that grants its tool for the rest of the
session, checked before the resume's write and stored by it; and the reads and revocation of a session's
grants, its owner's alone."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from beam_store import Action, Grant, args_sha256, new_id
from beam_store.records import Approvals

from ..errors import BeamError
from ..models import ActionResponseEnvelope
from . import reads
from .setup import Setup


def may_grant(tool: str, approvals: Approvals | None, grantable: Callable[[str], bool]) -> bool:
    """Whether the tool may be granted: the agent allows it, and its approvals need no more than the
    owner's one answer (a grant would otherwise skip four eyes or a quorum). Asked when a grant is made,
    and again at each call a grant would cover, by the tool's settings then."""
    needs_others = approvals is not None and (approvals.required > 1 or not approvals.self_approval)
    return grantable(tool) and not needs_others


def grantable_tools(runner: object) -> Callable[[str], bool]:
    """What the runner says of grants (its optional `grantable(tool)`); by default any tool."""
    grantable = getattr(runner, "grantable", None)
    return grantable if callable(grantable) else lambda tool: True


def grant_refusal(
    found: Mapping[str, Action | None],
    responses: Mapping[str, ActionResponseEnvelope],
    grantable: Callable[[str], bool],
    *,
    approver: bool,
) -> BeamError | None:
    """Why the resume's grants cannot be made: not the session's owner (BEM-086), or a tool that is not
    grantable (BEM-085); None where there are none, or all can."""
    for i, (action_id, envelope) in enumerate(responses.items()):
        action = found.get(action_id)
        if envelope.grant is None or action is None:
            continue
        where = f"actions.{i}.grant"
        if approver:
            return BeamError("BEM-086", f"only the session's owner may grant {action.tool}", field=where)
        if not may_grant(action.tool, action.approvals, grantable):
            return BeamError("BEM-085", f"{action.tool} cannot be granted for the session", field=where)
    return None


def made_grants(
    resolved: list[Action], responses: Mapping[str, ActionResponseEnvelope], user_id: str, now: str
) -> list[Grant]:
    """A grant for each approval that asks for one; `args` scope by the hash of the args as run (the
    edited ones where the person edited them)."""
    grants = []
    for action in resolved:
        envelope = responses.get(action.action_id)
        if envelope is None or envelope.grant is None or action.status != "resolved":
            continue
        run_args = action.run_args if action.run_args is not None else action.args
        grants.append(
            Grant(
                grant_id=new_id(),
                tool=action.tool,
                scope=envelope.grant,
                args_sha256=args_sha256(run_args) if envelope.grant == "args" else None,
                agent_name=action.agent_name,
                created_at=now,
                created_by=user_id,
            )
        )
    return grants


def list_grants(setup: Setup, session_id: str, user_id: str) -> list[Grant]:
    """The session's grants, oldest first; a session missing or another's is BEM-020, as other reads."""
    session = reads.session(setup, session_id, user_id)
    return sorted(session.grants.values(), key=lambda g: (g.created_at, g.grant_id))


def revoke_grant(setup: Setup, session_id: str, grant_id: str, user_id: str) -> None:
    """Remove one of the caller's session's grants: BEM-020 where the session is not the caller's,
    BEM-087 where it holds no such grant (revoked already, or never made)."""
    session = reads.session(setup, session_id, user_id)
    if not setup.store.remove_grant(session.session_id, grant_id, user_id):
        raise BeamError("BEM-087", f"grant {grant_id} not found", field="grant_id")

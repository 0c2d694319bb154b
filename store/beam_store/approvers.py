"""Who may answer an action, and what its votes come to (CONTRACT 11). Pure: no store, no clock.

An approver is named as a principal: `user:<id>` or `group:<name>`. The approver's inbox is keyed by
principal, so an action is listed under each of its principals while it is pending."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal, NamedTuple

from .records import Action, ResponseStatus, Vote

Tally = Literal["pending", "resolved", "cancelled"]


def user_principal(user_id: str) -> str:
    return f"user:{user_id}"


def group_principal(group: str) -> str:
    return f"group:{group}"


def caller_principals(user_id: str, groups: Iterable[str] = ()) -> list[str]:
    """The principals a caller answers as: their own and their groups', each once."""
    return list(dict.fromkeys([user_principal(user_id), *(group_principal(g) for g in groups)]))


def action_principals(action: Action) -> list[str]:
    """Who may answer `action`, as principals: its tool's approvers, and the session's owner unless four
    eyes rule the owner out; with no approvers named, the owner alone (as before approvers existed)."""
    rule = action.approvals
    if rule is None:
        return [user_principal(action.user_id)]
    owner = user_principal(action.user_id)
    named = [*(user_principal(u) for u in rule.users), *(group_principal(g) for g in rule.groups)]
    if not rule.self_approval:  # four eyes: not the owner, even where listed by name
        return list(dict.fromkeys(p for p in named if p != owner))
    return list(dict.fromkeys([owner, *named]))


def owner_approves(action: Action) -> bool:
    """Whether the session's owner is among the action's approvers."""
    return action.approvals is None or action.approvals.self_approval


def listed_principals(action: Action) -> list[str]:
    """The action's approvers other than the session's owner: each has an inbox entry of its own."""
    owner = user_principal(action.user_id)
    return [p for p in action_principals(action) if p != owner]


def may_approve(action: Action, user_id: str, groups: Iterable[str] = ()) -> bool:
    """Whether the caller is among the action's approvers (by id or by one of their groups); never its
    requester where four eyes rule them out, whatever group they are in."""
    if user_id == action.user_id and not owner_approves(action):
        return False
    return bool(set(caller_principals(user_id, groups)) & set(action_principals(action)))


def approval_cursor(action: Action) -> str:
    """Where an action sits in an approver's inbox (newest first): the cursor of a page ending with it."""
    return f"{action.created_at}#{action.action_id}"


def required(action: Action) -> int:
    return action.approvals.required if action.approvals is not None else 1


def tally(votes: Sequence[Vote], needed: int) -> Tally:
    """What votes come to: one refusal cancels; `needed` distinct approvals resolve; else still pending."""
    if any(v.status == "cancelled" for v in votes):
        return "cancelled"
    approvals = {v.user_id for v in votes if v.status == "submitted"}
    return "resolved" if len(approvals) >= needed else "pending"


def with_vote(action: Action, user_id: str, status: ResponseStatus, at: str, reason: str | None) -> Action:
    """`action` with the caller's vote added last (the store conditions on the count before it)."""
    vote = Vote(user_id=user_id, status=status, at=at, reason=reason)
    return action.model_copy(update={"votes": [*action.votes, vote]})


def votes_before(action: Action) -> int | None:
    """How many votes the stored action must hold for a write carrying `action` to apply: all but the
    last (the write's own); None where the action carries no votes (nothing to condition on)."""
    return len(action.votes) - 1 if action.votes else None


class ApprovalPage(NamedTuple):
    """A page of an approver's inbox, newest first, and the cursor of the next (None: no more)."""

    actions: list[Action]
    cursor: str | None


def inbox_page(found: Sequence[Action], limit: int | None, full: bool) -> ApprovalPage:
    """Actions found under several principals as one page: each once, newest first, up to `limit`;
    `full`: a principal had more to give (so the page, even short of `limit`, may not be the last)."""
    unique = {a.action_id: a for a in found}.values()
    page = sorted(unique, key=approval_cursor, reverse=True)[:limit]
    more = full or (limit is not None and len(unique) > limit)
    return ApprovalPage(page, approval_cursor(page[-1]) if more and page else None)

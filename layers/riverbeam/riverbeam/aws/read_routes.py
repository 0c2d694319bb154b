"""The read routes of the HTTP API, for the session's owner (CONTRACT section 7): the records function's,
with GET /openapi.json."""

# no `from __future__ import annotations`: the pages' annotations are evaluated faster as objects
import json
from typing import Annotated, Any, Literal

from beam_store import Action, Grant, Interaction, Message, Run, Session
from beam_store.records import ActionStatus, action_cursor
from pydantic import BaseModel, ConfigDict, Field

from ..models import AuthContext
from . import runtime
from .identity import QueryCaller, caller
from .router import Answer, Request, Router, answer, error_answers

MAX_PAGE = 1000
MAX_INBOX_PAGE = 100

records_routes = Router()
# the query parameters, as the router checks them and the OpenAPI document describes them
UserQuery = Annotated[
    str | None, Field(description="the caller, where the deployment's AuthMode is `none` (else ignored)")
]
After = Annotated[int, Field(ge=-1, description="only what comes after this sequence number")]
Limit = Annotated[int, Field(ge=1, le=MAX_PAGE, description="at most this many")]
ActionStatusQuery = Annotated[ActionStatus | None, Field(description="only the actions with this status")]
Cursor = Annotated[str | None, Field(description="the `next_after` of the page before")]
GroupsQuery = Annotated[
    str | None,
    Field(
        description="the caller's groups, comma-separated, where the AuthMode is `none` (else the token's)"
    ),
]
InboxLimit = Annotated[int, Field(ge=1, le=MAX_INBOX_PAGE, description="at most this many")]
InboxCursor = Annotated[str | None, Field(description="the `next_cursor` of the page before")]


class Page(BaseModel):
    """Built by the first read that answers one, not at import (as the records' models are)."""

    model_config = ConfigDict(defer_build=True)


class MessagesPage(Page):
    session_id: str
    messages: list[Message]
    next_after: int | None = None


class ActionsPage(Page):
    session_id: str
    actions: list[Action]
    # the cursor of the next page, where this one was full
    next_after: str | None = None


class ApprovalsPage(Page):
    """The approver's inbox: pending actions of every session the caller may answer, newest first."""

    actions: list[Action]
    next_cursor: str | None = None


class GrantsPage(Page):
    """A session's standing grants, oldest first."""

    session_id: str
    grants: list[Grant]


class FramesPage(Page):
    run_id: str
    frames: list[dict[str, Any]]
    next_after: int | None = None


def _reader(request: Request, user_id: str | None) -> str:
    return caller(runtime.settings(), QueryCaller(request.claims, user_id)).user_id


def _approver(request: Request, user_id: str | None, groups: str | None) -> AuthContext:
    """The caller with their groups: the token's (AuthMode jwt), else the `groups` query parameter."""
    named = tuple(g for g in (groups or "").split(",") if g)
    return caller(runtime.settings(), QueryCaller(request.claims, user_id, named))


@records_routes.get(
    "/sessions/<session_id>", summary="A session", responses=error_answers("BEM-020", "BEM-030")
)
def get_session(request: Request, session_id: str, user_id: UserQuery = None) -> Session:
    return runtime.beam().read_session(session_id, user_id=_reader(request, user_id))


@records_routes.get(
    "/sessions/<session_id>/messages",
    summary="A session's messages in seq order, after a cursor",
    responses=error_answers("BEM-001", "BEM-020", "BEM-030"),
)
def get_messages(
    request: Request,
    session_id: str,
    after: After = 0,
    limit: Limit = MAX_PAGE,
    user_id: UserQuery = None,
    groups: GroupsQuery = None,
) -> MessagesPage:
    reader = _approver(request, user_id, groups)
    found = runtime.beam().read_messages(
        session_id, user_id=reader.user_id, groups=reader.groups, after_seq=after, limit=limit
    )
    more = len(found) == limit
    return MessagesPage(session_id=session_id, messages=found, next_after=found[-1].seq if more else None)


@records_routes.get(
    "/sessions/<session_id>/actions",
    summary="A session's actions for an approval inbox: by status (`pending` first to answer), oldest first",
    description="`status` keeps the actions with that status only; `after` is the `next_after` of the page "
    "before. Each action carries its tool, its args and their `args_sha256`, its `expires_at` and, once "
    "decided, the response (who, when, reason, edited args and their hash).",
    responses=error_answers("BEM-001", "BEM-020", "BEM-030"),
)
def get_actions(
    request: Request,
    session_id: str,
    status: ActionStatusQuery = None,
    after: Cursor = None,
    limit: Limit = MAX_PAGE,
    user_id: UserQuery = None,
) -> ActionsPage:
    found = runtime.beam().read_actions(
        session_id, user_id=_reader(request, user_id), status=status, after=after, limit=limit
    )
    more = len(found) == limit
    return ActionsPage(
        session_id=session_id, actions=found, next_after=action_cursor(found[-1]) if more else None
    )


@records_routes.get(
    "/sessions/<session_id>/grants",
    summary="A session's standing grants (always allow): the owner's only",
    description="Each grant: `grant_id`, `tool`, `scope` (`tool`: any args; `args`: the args hashing to "
    "`args_sha256`), `created_at`, `created_by`. A later call of the session a grant covers runs unasked.",
    responses=error_answers("BEM-020", "BEM-030"),
)
def get_grants(request: Request, session_id: str, user_id: UserQuery = None) -> GrantsPage:
    found = runtime.beam().list_grants(session_id, user_id=_reader(request, user_id))
    return GrantsPage(session_id=session_id, grants=found)


@records_routes.delete(
    "/sessions/<session_id>/grants/<grant_id>",
    summary="Revoke a standing grant: the session's later calls it covered ask again",
    responses={204: {"description": "revoked"}} | error_answers("BEM-020", "BEM-030", "BEM-087"),
)
def delete_grant(request: Request, session_id: str, grant_id: str, user_id: UserQuery = None) -> Answer:
    runtime.beam().revoke_grant(session_id, grant_id, user_id=_reader(request, user_id))
    return answer(204, "")


@records_routes.get(
    "/interactions/<interaction_id>", summary="An interaction", responses=error_answers("BEM-022", "BEM-030")
)
def get_interaction(request: Request, interaction_id: str, user_id: UserQuery = None) -> Interaction:
    return runtime.beam().read_interaction(interaction_id, user_id=_reader(request, user_id))


@records_routes.get("/runs/<run_id>", summary="A run", responses=error_answers("BEM-023", "BEM-030"))
def get_run(request: Request, run_id: str, user_id: UserQuery = None) -> Run:
    return runtime.beam().read_run(run_id, user_id=_reader(request, user_id))


@records_routes.get(
    "/runs/<run_id>/frames",
    summary="A streamed run's frames after `after` (a late subscriber misses nothing)",
    responses=error_answers("BEM-001", "BEM-023", "BEM-030"),
)
def get_frames(
    request: Request, run_id: str, after: After = -1, limit: Limit = MAX_PAGE, user_id: UserQuery = None
) -> FramesPage:
    found = runtime.beam().read_frames(
        run_id, user_id=_reader(request, user_id), after_seq=after, limit=limit
    )
    more = len(found) == limit
    return FramesPage(run_id=run_id, frames=found, next_after=found[-1]["frame_seq"] if more else None)


@records_routes.get(
    "/actions/<action_id>",
    summary="An action and its audit trail",
    description="Who asked (`agent_name`, `run_id`), the args as requested (`args`, `args_sha256`) and as "
    "run (`run_args`, `run_args_sha256`), who decided and when (`response`: who, when, reason, "
    "`edited_args` and their hash) or that it expired (`status` `expired`), and the tool's `outcome`.",
    responses=error_answers("BEM-027", "BEM-030"),
)
def get_action(
    request: Request, action_id: str, user_id: UserQuery = None, groups: GroupsQuery = None
) -> Action:
    reader = _approver(request, user_id, groups)
    return runtime.beam().read_action(action_id, user_id=reader.user_id, groups=reader.groups)


@records_routes.get(
    "/approvals",
    summary="The approver's inbox: the pending actions the caller may answer, across sessions, newest first",
    description="An action is listed for the session's owner (unless its tool asks for four eyes) and for "
    "each approver its tool names, by user id or by group. Each carries its `approvals` (users, groups, "
    "`required`, `self_approval`) and the `votes` so far. `cursor` is the `next_cursor` of the page before.",
    responses=error_answers("BEM-001", "BEM-030"),
)
def get_approvals(
    request: Request,
    status: Literal["pending"] = "pending",
    cursor: InboxCursor = None,
    limit: InboxLimit = 50,
    user_id: UserQuery = None,
    groups: GroupsQuery = None,
) -> ApprovalsPage:
    reader = _approver(request, user_id, groups)
    page = runtime.beam().list_approvals(
        user_id=reader.user_id, groups=reader.groups, status=status, cursor=cursor, limit=limit
    )
    return ApprovalsPage(actions=page.actions, next_cursor=page.cursor)


@records_routes.get("/openapi.json", documented=False)
def get_openapi(request: Request) -> Answer:
    # asked for once in a while, and by no other function: imported here
    from .http import invoke_routes, resume_routes
    from .openapi import openapi_document

    return answer(200, json.dumps(openapi_document([invoke_routes, resume_routes, records_routes])))

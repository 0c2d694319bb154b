"""The HTTP API (CONTRACT section 7) on Powertools' event handler: the routes of each function, the one
place that maps errors to the JSON body of section 5, and the OpenAPI document of them all."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Annotated, Any, cast

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.event_handler.openapi.params import Query
from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter
from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEventV2
from beam_store import Action, Interaction, Message, Run, Session
from beam_store.records import ActionStatus, action_cursor
from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from ..errors import CATALOGUE, BeamError, ErrorResponse
from ..models import AgentResult, InvokeRequest, ResumeRequest, StreamAck
from ..pipeline import intake
from . import refusals, runtime, service
from .identity import BodyCaller, QueryCaller, caller

MAX_PAGE = 1000


def json_response(status: int, model: BaseModel) -> Response[str]:
    return Response(
        status_code=status, content_type=content_types.APPLICATION_JSON, body=model.model_dump_json()
    )


def error_response(error: Exception, request_id: str | None) -> Response[str]:
    status, body = refusals.answer(error, request_id)
    return Response(status_code=status, content_type=content_types.APPLICATION_JSON, body=body)


def _request_id(app: APIGatewayHttpResolver) -> str | None:
    return str(app.current_event.request_context.request_id or "") or None


def http_app(*routers: APIGatewayHttpRouter) -> APIGatewayHttpResolver:
    """A resolver with the given routes and the error mapping every route shares."""
    app = APIGatewayHttpResolver(enable_validation=True)
    for router in routers:
        app.include_router(router)

    @app.exception_handler(RequestValidationError)
    def invalid(error: RequestValidationError) -> Response[str]:
        # a location is (where, field...): "query", "after"
        problems = [(intake.field_path(e["loc"][1:]) or str(e["loc"][0]), e["msg"]) for e in error.errors()]
        return error_response(intake.invalid(problems), _request_id(app))

    @app.not_found
    def no_route(_: Exception) -> Response[str]:
        event = app.current_event
        return error_response(
            BeamError("BEM-010", f"no route {event.http_method} {event.path}"), _request_id(app)
        )

    @app.exception_handler(Exception)
    def refused(error: Exception) -> Response[str]:
        return error_response(error, _request_id(app))

    return app


def _event(router: APIGatewayHttpRouter) -> APIGatewayProxyEventV2:
    return router.current_event


def _claims(router: APIGatewayHttpRouter) -> dict[str, Any]:
    return _event(router).request_context.authorizer.jwt_claim


def _post(
    router: APIGatewayHttpRouter, serve: Callable[[Any, service.CallerOf], tuple[int, BaseModel]]
) -> Response[str]:
    """A POST route: its body served with the caller that the deployment's AuthMode decides on."""
    claims = _claims(router)
    event = _event(router)
    body = intake.decoded_body(event.body, base64_encoded=bool(event.is_base64_encoded))
    status, model = serve(body, lambda given: caller(runtime.settings(), BodyCaller(claims, given)))
    return json_response(status, model)


def _errors(*codes: str) -> dict[int, OpenAPIResponse]:
    """The error answers of a route, for its OpenAPI description: each status with its codes."""
    statuses = sorted({CATALOGUE[c][0] for c in codes})
    return {
        s: cast(
            OpenAPIResponse,
            {
                "description": ", ".join(c for c in codes if CATALOGUE[c][0] == s),
                "content": {"application/json": {"model": ErrorResponse}},
            },
        )
        for s in statuses
    }


def _ok(status: int, model: type[BaseModel], description: str) -> dict[int, OpenAPIResponse]:
    return {
        status: cast(
            OpenAPIResponse, {"description": description, "content": {"application/json": {"model": model}}}
        )
    }


# POST /invoke

invoke_routes = APIGatewayHttpRouter()


@invoke_routes.post(
    "/invoke",
    summary="Invoke an agent",
    description="Not streamed: runs the agent and answers the Result. Streamed (`stream: true`): answers "
    "a StreamAck at once; the frames go to the session's WebSocket connections.",
    responses={
        **_ok(200, AgentResult, "the Result (not streamed)"),
        **_ok(202, StreamAck, "accepted: the frames follow on the WebSocket (streamed)"),
        **_errors("BEM-001", "BEM-030", "BEM-031", "BEM-021", "BEM-022", "BEM-040", "BEM-500", "BEM-503"),
    },
)
def post_invoke() -> Response[str]:
    return _post(invoke_routes, service.invoke)


# POST /resume

resume_routes = APIGatewayHttpRouter()


@resume_routes.post(
    "/resume",
    summary="Answer an agent's pending actions and resume it",
    description="Resolves every action atomically (exactly one concurrent resume of an action wins), "
    "answers a StreamAck, and runs the agent in the worker; the frames follow on the WebSocket.",
    responses={
        **_ok(202, StreamAck, "accepted: the frames follow on the WebSocket"),
        **_errors(
            "BEM-001",
            "BEM-062",
            "BEM-063",
            "BEM-064",
            "BEM-065",
            "BEM-066",
            "BEM-067",
            "BEM-070",
            "BEM-071",
            "BEM-030",
            "BEM-031",
            "BEM-027",
            "BEM-040",
            "BEM-500",
            "BEM-503",
        ),
    },
)
def post_resume() -> Response[str]:
    return _post(resume_routes, service.resume)


# the reads, for the session's owner

records_routes = APIGatewayHttpRouter()
UserQuery = Annotated[
    str | None, Query(description="the caller, where the deployment's AuthMode is `none` (else ignored)")
]
After = Annotated[int, Query(ge=-1, description="only what comes after this sequence number")]
Limit = Annotated[int, Query(ge=1, le=MAX_PAGE, description="at most this many")]
ActionStatusQuery = Annotated[ActionStatus | None, Query(description="only the actions with this status")]


class MessagesPage(BaseModel):
    session_id: str
    messages: list[Message]
    next_after: int | None = None


class ActionsPage(BaseModel):
    session_id: str
    actions: list[Action]
    # the cursor of the next page, where this one was full
    next_after: str | None = None


class FramesPage(BaseModel):
    run_id: str
    frames: list[dict[str, Any]]
    next_after: int | None = None


def _reader(user_id: str | None) -> str:
    return caller(runtime.settings(), QueryCaller(_claims(records_routes), user_id)).user_id


@records_routes.get("/sessions/<session_id>", summary="A session", responses=_errors("BEM-020", "BEM-030"))
def get_session(session_id: str, user_id: UserQuery = None) -> Session:
    return runtime.beam().read_session(session_id, user_id=_reader(user_id))


@records_routes.get(
    "/sessions/<session_id>/messages",
    summary="A session's messages in seq order, after a cursor",
    responses=_errors("BEM-001", "BEM-020", "BEM-030"),
)
def get_messages(
    session_id: str, after: After = 0, limit: Limit = MAX_PAGE, user_id: UserQuery = None
) -> MessagesPage:
    found = runtime.beam().read_messages(session_id, user_id=_reader(user_id), after_seq=after, limit=limit)
    more = len(found) == limit
    return MessagesPage(session_id=session_id, messages=found, next_after=found[-1].seq if more else None)


@records_routes.get(
    "/sessions/<session_id>/actions",
    summary="A session's actions for an approval inbox: by status (`pending` first to answer), oldest first",
    description="`status` keeps the actions with that status only; `after` is the `next_after` of the page "
    "before. Each action carries its tool, its args and their `args_sha256`, its `expires_at` and, once "
    "decided, the response (who, when, reason, edited args and their hash).",
    responses=_errors("BEM-001", "BEM-020", "BEM-030"),
)
def get_actions(
    session_id: str,
    status: ActionStatusQuery = None,
    after: Annotated[str | None, Query(description="the `next_after` of the page before")] = None,
    limit: Limit = MAX_PAGE,
    user_id: UserQuery = None,
) -> ActionsPage:
    found = runtime.beam().read_actions(
        session_id, user_id=_reader(user_id), status=status, after=after, limit=limit
    )
    more = len(found) == limit
    return ActionsPage(
        session_id=session_id, actions=found, next_after=action_cursor(found[-1]) if more else None
    )


@records_routes.get(
    "/interactions/<interaction_id>", summary="An interaction", responses=_errors("BEM-022", "BEM-030")
)
def get_interaction(interaction_id: str, user_id: UserQuery = None) -> Interaction:
    return runtime.beam().read_interaction(interaction_id, user_id=_reader(user_id))


@records_routes.get("/runs/<run_id>", summary="A run", responses=_errors("BEM-023", "BEM-030"))
def get_run(run_id: str, user_id: UserQuery = None) -> Run:
    return runtime.beam().read_run(run_id, user_id=_reader(user_id))


@records_routes.get(
    "/runs/<run_id>/frames",
    summary="A streamed run's frames after `after` (a late subscriber misses nothing)",
    responses=_errors("BEM-001", "BEM-023", "BEM-030"),
)
def get_frames(
    run_id: str, after: After = -1, limit: Limit = MAX_PAGE, user_id: UserQuery = None
) -> FramesPage:
    found = runtime.beam().read_frames(run_id, user_id=_reader(user_id), after_seq=after, limit=limit)
    more = len(found) == limit
    return FramesPage(run_id=run_id, frames=found, next_after=found[-1]["frame_seq"] if more else None)


@records_routes.get(
    "/actions/<action_id>",
    summary="An action and its audit trail",
    description="Who asked (`agent_name`, `run_id`), the args as requested (`args`, `args_sha256`) and as "
    "run (`run_args`, `run_args_sha256`), who decided and when (`response`: who, when, reason, "
    "`edited_args` and their hash) or that it expired (`status` `expired`), and the tool's `outcome`.",
    responses=_errors("BEM-027", "BEM-030"),
)
def get_action(action_id: str, user_id: UserQuery = None) -> Action:
    return runtime.beam().read_action(action_id, user_id=_reader(user_id))


@records_routes.get("/openapi.json", include_in_schema=False)
def get_openapi() -> Response[str]:
    return Response(
        status_code=200, content_type=content_types.APPLICATION_JSON, body=json.dumps(openapi_document())
    )


def openapi_document() -> dict[str, Any]:
    """The OpenAPI document of every HTTP route. The request bodies of /invoke and /resume are checked by
    the pipeline (so that the contract's specific codes win over BEM-001), and their schemas added here."""
    app = http_app(invoke_routes, resume_routes, records_routes)
    document: dict[str, Any] = json.loads(
        app.get_openapi_json_schema(
            title="Riverbeam",
            version="0.1.0",
            description="Agents that ask a person before they act: the HTTP API (CONTRACT section 7).",
        )
    )
    # a body or query that does not fit is answered 400 BEM-001 (section 5), not the resolver's 422
    for operations in document["paths"].values():
        for operation in operations.values():
            operation.get("responses", {}).pop("422", None)
    for unused in ("HTTPValidationError", "ValidationError", "ResponseValidationError"):
        document.get("components", {}).get("schemas", {}).pop(unused, None)
    bodies: dict[str, type[BaseModel]] = {"/invoke": InvokeRequest, "/resume": ResumeRequest}
    _, schemas = models_json_schema(
        [(model, "validation") for model in bodies.values()], ref_template="#/components/schemas/{model}"
    )
    document.setdefault("components", {}).setdefault("schemas", {}).update(schemas.get("$defs", {}))
    for path, model in bodies.items():
        document["paths"][path]["post"]["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{model.__name__}"}}},
        }
    return document

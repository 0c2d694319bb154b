"""The HTTP API (CONTRACT section 7) on riverbeam.aws.router, whose HttpApp maps every error to the JSON
body of section 5: POST /invoke and /resume here, the reads in riverbeam.aws.read_routes (so that neither
function defines, nor imports, the other's routes). `body` names the model the pipeline checks a body
against (not the router: the contract's specific codes win over BEM-001), for the OpenAPI document."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from ..models import AgentResult, InvokeRequest, ResumeRequest, StreamAck
from . import runtime, service
from .identity import BodyCaller, caller
from .router import Answer, Request, Router, answer, error_answers, http_app, ok_answer

__all__ = ["error_answers", "http_app", "invoke_routes", "ok_answer", "resume_routes"]


def _post(request: Request, serve: Callable[[Any, service.CallerOf], tuple[int, BaseModel]]) -> Answer:
    """A POST route: its body served with the caller that the deployment's AuthMode decides on."""
    claims = request.claims
    status, model = serve(request.body, lambda given: caller(runtime.settings(), BodyCaller(claims, given)))
    return answer(status, model.model_dump_json())


# POST /invoke

invoke_routes = Router()


@invoke_routes.post(
    "/invoke",
    body=InvokeRequest,
    summary="Invoke an agent",
    description="Not streamed: runs the agent and answers the Result. Streamed (`stream: true`): answers "
    "a StreamAck at once; the frames go to the session's WebSocket connections. Sent again with the same "
    "`request_id` by the same caller within 24 hours, it gets the first answer and starts nothing.",
    responses={
        **ok_answer(200, AgentResult, "the Result (not streamed)"),
        **ok_answer(202, StreamAck, "accepted: the frames follow on the WebSocket (streamed)"),
        **error_answers(
            "BEM-001",
            "BEM-030",
            "BEM-031",
            "BEM-021",
            "BEM-022",
            "BEM-040",
            "BEM-043",
            "BEM-044",
            "BEM-500",
            "BEM-503",
        ),
    },
)
def post_invoke(request: Request) -> Answer:
    return _post(request, service.invoke)


# POST /resume

resume_routes = Router()


@resume_routes.post(
    "/resume",
    body=ResumeRequest,
    summary="Answer an agent's pending actions and resume it",
    description="Resolves every action atomically (exactly one concurrent resume of an action wins), "
    "answers a StreamAck, and runs the agent in the worker; the frames follow on the WebSocket. Sent "
    "again with the same `request_id` on every response, it gets the first StreamAck and runs nothing.",
    responses={
        **ok_answer(202, StreamAck, "accepted: the frames follow on the WebSocket"),
        **error_answers(
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
            "BEM-043",
            "BEM-500",
            "BEM-503",
        ),
    },
)
def post_resume(request: Request) -> Answer:
    return _post(request, service.resume)

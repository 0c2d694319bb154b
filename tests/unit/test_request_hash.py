"""What makes two requests "the same" for a retry (riverbeam.pipeline.retries.request_sha256), and the
deployment's claim lease against its functions' timeouts. No store, no network."""

from __future__ import annotations

import uuid

from riverbeam.aws.runtime import REQUEST_LEASE_SECONDS
from riverbeam.models import InvokeRequest, ResumeRequest
from riverbeam.pipeline.retries import request_sha256

from tests.support.lambda_stack import resources_of, template

SESSION, ACTION, REQUEST = (str(uuid.uuid4()) for _ in range(3))


def invoke(**changes: object) -> InvokeRequest:
    body = {
        "agent_name": "author",
        "session_id": SESSION,
        "content": [{"type": "text", "text": "Push docs/update"}],
        "auth_context": {"user_id": "u1"},
        "request_id": REQUEST,
    }
    return InvokeRequest.model_validate(body | changes)


def resume(**envelope: object) -> ResumeRequest:
    answer = {"action_id": ACTION, "request_id": REQUEST, "status": "submitted"} | envelope
    return ResumeRequest.model_validate(
        {
            "agent_name": "author",
            "session_id": SESSION,
            "interaction_id": SESSION,
            "actions": [answer],
            "auth_context": {"user_id": "u1"},
        }
    )


def test_the_hash_is_of_the_request_as_validated_without_its_caller() -> None:
    same = request_sha256(invoke())
    assert len(same) == 64
    # defaults spelt out, ids in another case, another profile or caller: the same request
    assert request_sha256(invoke(stream=False, interaction_id=None, session_id=SESSION.upper())) == same
    assert request_sha256(invoke(content=[{"text": "Push docs/update"}])) == same
    assert request_sha256(invoke(auth_context={"user_id": "u1", "profile_id": "p"})) == same
    # anything the request asks for differently: another request
    for other in (
        invoke(stream=True),
        invoke(content=[{"type": "text", "text": "Push main"}]),
        invoke(session_id=str(uuid.uuid4())),
        invoke(interaction_id=str(uuid.uuid4())),
        invoke(agent_name="reviewer"),
    ):
        assert request_sha256(other) != same


def test_a_resumes_hash_covers_every_response() -> None:
    same = request_sha256(resume())
    assert request_sha256(resume(action_id=ACTION.upper(), kind="confirmation")) == same
    for other in (
        resume(status="cancelled"),
        resume(reason="because"),
        resume(edited_args={"ref": "main"}),
        resume(args_sha256="0" * 64),
        resume(request_id=str(uuid.uuid4())),
    ):
        assert request_sha256(other) != same


def test_a_claim_outlives_every_api_function() -> None:
    """A non-streamed invoke holds its claim while its agent runs: the lease must outlast the function's
    timeout, or a retry could start a second run beside a first still running."""
    default = template()["Globals"]["Function"]["Timeout"]
    functions = resources_of("AWS::Serverless::Function")
    for name in ("InvokeFunction", "ResumeFunction"):
        timeout = functions[name]["Properties"].get("Timeout", default)
        assert timeout < REQUEST_LEASE_SECONDS, name

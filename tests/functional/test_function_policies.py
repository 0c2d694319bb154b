"""Every DynamoDB operation a function's expiry path makes (recorded on moto, as botocore sends it) is one
its policy in template.yaml allows: the sweep (with its push: a gone connection forgotten), the lazy expiry
of an invoke and of a refused resume, and the worker closing a partial resume whose other action expired.
A call the policy misses is AccessDenied in AWS and nowhere else (issue 13's review)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from beam_store import Connection, DynamoBeamStore
from botocore.exceptions import ClientError
from riverbeam import BeamError, ModelTurn, RiverBeam, ScriptedModel, ToolAgentRunner, ToolCall, tool
from riverbeam.aws.push import WebSocketPusher
from riverbeam_local.stack.template import ROOT, read

from tests.support.agents import FrameLog, invoke_body, resume_body
from tests.support.clock import Clock, asked, clocked
from tests.support.stores import moto_store


def _allowed(function: str) -> set[str]:
    found: set[str] = set()
    for statement in read(ROOT)["Resources"][function]["Properties"]["Policies"][0]["Statement"]:
        action = statement["Action"]
        found |= {action} if isinstance(action, str) else set(action)
    return found


# IAM authorizes a TransactWriteItems item by item, each as the single-item action of its kind (there is no
# dynamodb:TransactWriteItems action)
_TRANSACTED = {
    "Put": "dynamodb:PutItem",
    "Update": "dynamodb:UpdateItem",
    "Delete": "dynamodb:DeleteItem",
    "ConditionCheck": "dynamodb:ConditionCheckItem",
}


def _authorized_as(operation: str, params: dict[str, Any]) -> set[str]:
    """The IAM actions a DynamoDB call is authorized as."""
    if operation == "TransactWriteItems":
        return {_TRANSACTED[kind] for item in params["TransactItems"] for kind in item}
    return {f"dynamodb:{operation}"}


@contextmanager
def _recorded(store: DynamoBeamStore) -> Iterator[set[str]]:
    calls: set[str] = set()

    def record(model: Any, params: dict[str, Any], **_: Any) -> None:
        calls.update(_authorized_as(model.name, params))

    # before the request is built: the call's own parameters (TransactItems)
    store.client.meta.events.register("before-parameter-build.dynamodb", record)
    try:
        yield calls
    finally:
        store.client.meta.events.unregister("before-parameter-build.dynamodb", record)


def _missing(calls: set[str], function: str) -> list[str]:
    assert calls, "nothing recorded"
    return sorted(calls - _allowed(function))


class _ManagementApi:
    """post_to_connection of API Gateway's management API: one connection gone, the other live."""

    def __init__(self) -> None:
        self.posted: list[str] = []

    def post_to_connection(self, ConnectionId: str, Data: bytes) -> None:
        if ConnectionId == "gone":
            raise ClientError({"Error": {"Code": "GoneException", "Message": ""}}, "PostToConnection")
        self.posted.append(ConnectionId)


def test_every_dynamodb_call_of_the_sweep_is_allowed_by_the_sweep_functions_policy() -> None:
    clock = Clock()
    with moto_store() as store:
        beam, _ = clocked(store, clock)
        streamed = FrameLog()
        beam.invoke(invoke_body(stream=True), on_frame=streamed)  # a streamed run that asks for approval
        session_id = streamed[-1].session_id
        for connection_id in ("gone", "live"):
            store.put_connection(
                Connection(
                    connection_id=connection_id,
                    session_id=session_id,
                    user_id="u1",
                    connected_at="2026-12-03T09:00:00.000000Z",
                    expires_at=2**40,
                )
            )
        clock.advance(days=1)
        api = _ManagementApi()
        pusher = WebSocketPusher(beam, api)
        with _recorded(store) as calls:
            assert len(beam.sweep_expired(on_frame=pusher)) == 1
        # the frame was kept and pushed, the gone connection forgotten
        assert api.posted == ["live"] and pusher.gone == 1
        assert beam.connections(session_id) == ["live"]
        assert "execute-api:ManageConnections" in _allowed("SweepFunction")
        assert not _missing(calls, "SweepFunction"), _missing(calls, "SweepFunction")


def test_the_lazy_expiry_of_an_invoke_and_of_a_resume_is_allowed_by_their_policies() -> None:
    clock = Clock()
    with moto_store() as store:
        beam, _ = clocked(store, clock)
        overdue, in_process, late = asked(beam), asked(beam), asked(beam)
        clock.advance(days=2)
        for result, accept in ((overdue, True), (in_process, False)):
            session_id, interaction_id = str(result.session_id), str(result.interaction_id)
            body = invoke_body(session_id, text="and now?", interaction_id=interaction_id)
            # as InvokeFunction: accepted (streamed), or run in process; the expiry told by the opening write
            with _recorded(store) as calls:
                (beam.accept_invoke if accept else beam.invoke)(body)
            assert not _missing(calls, "InvokeFunction"), _missing(calls, "InvokeFunction")
        # as ResumeFunction: refused past its time, the action expired and its interaction closed
        with _recorded(store) as calls, pytest.raises(BeamError) as refused:
            beam.accept_resume(resume_body(late))
        assert refused.value.code == "BEM-070"
        assert not _missing(calls, "ResumeFunction"), _missing(calls, "ResumeFunction")


def test_the_worker_closing_a_partial_resume_whose_other_action_expired_is_allowed() -> None:
    clock = Clock()

    @tool(confirm_required=True)
    def git_push(ref: str) -> str:
        """Push; meanwhile the deploy's time passes and a sweep expires it."""
        clock.advance(minutes=2)
        beam.sweep_expired()
        return ref

    @tool(confirm_required=True, expires_after=60)
    def deploy(env: str) -> str:
        """Deploy, if someone says so within a minute."""
        return env

    calls = [ToolCall(name="git_push", args={"ref": "a"}), ToolCall(name="deploy", args={"env": "prod"})]
    with moto_store() as store:
        beam = RiverBeam(store, clock=clock)
        model = ScriptedModel([ModelTurn(tool_calls=calls), ModelTurn(text="done")])
        beam.register_agent("author", ToolAgentRunner(model=model, tools=[git_push, deploy]))
        job = beam.accept_resume(resume_body(asked(beam)))
        with _recorded(store) as made:
            assert beam.run_job(job) is not None
        assert not _missing(made, "WorkerFunction"), _missing(made, "WorkerFunction")
        run = store.get_run(job.run_id)
        assert run is not None and run.status == "completed"


def test_an_invoke_whose_hand_off_fails_frees_its_request_id_as_its_policy_allows() -> None:
    with moto_store() as store:
        beam, _ = clocked(store, Clock())
        body = invoke_body(request_id=str(uuid.uuid4()))

        def queue_unreachable(job: Any) -> None:
            raise RuntimeError("the queue refused the job")

        # as InvokeFunction: the request_id claimed, the hand-off fails, the claim released (a DeleteItem);
        # the library raises the hand-off's own error (an edge would answer it BEM-500)
        with _recorded(store) as calls, pytest.raises(RuntimeError):
            beam.accept_invoke(body, hand_off=queue_unreachable)
        assert "dynamodb:DeleteItem" in calls
        assert not _missing(calls, "InvokeFunction"), _missing(calls, "InvokeFunction")
        # freed: the same request sent again is accepted afresh
        handed: list[Any] = []
        job = beam.accept_invoke(body, hand_off=handed.append)
        assert handed == [job]

"""A runner's paused state (CONTRACT 15), through RiverBeam on every store: what a runner that
`keeps_state` returns with its pause is given back to the interaction's resume in another RiverBeam (another
process); a resume that finds the state kept by an agent with other tools fails BEM-083 before the runner
runs (no tool runs); a finished or failed run drops the state."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from beam_store import BeamStore, DynamoBeamStore, TextPart
from moto import mock_aws
from riverbeam import ActionRequest, AgentInput, AgentResult, BeamError, Emit, RiverBeam

from tests.support.agents import invoke_body, resume_body
from tests.support.stores import dynamodb_client


class Pausing:
    """A runner of another framework, reduced to its state: it asks for `deploy` and keeps what it will
    need on resume; on resume it runs `deploy` (counted) with what the state says."""

    keeps_state = True
    decides_calls = True

    def __init__(self, schema: dict[str, Any], ran: list[dict[str, Any]]) -> None:
        self.schema, self.ran = schema, ran
        self.given: list[Any] = []

    def fingerprint(self) -> dict[str, Any]:
        return {"agent": "pausing", "tools": {"deploy": self.schema}}

    def run(self, input: AgentInput, emit: Emit) -> AgentResult:
        self.given.append(input.state)
        if not input.actions:
            state = {"turn": 1, "asked": "deploy", "history": ["deploy v2?"]}
            ask = ActionRequest(tool="deploy", args={"version": "v2"})
            return AgentResult(action_required=[ask], content=[TextPart(text="may I?")], state=state)
        self.ran.append({"state": input.state, "args": input.actions[0].args})
        return AgentResult(content=[TextPart(text="deployed")])


def _beam(store: BeamStore, runner: Pausing) -> RiverBeam:
    beam = RiverBeam()
    beam.set_store(store)
    beam.register_agent("author", runner)
    return beam


SCHEMA = {"type": "object", "properties": {"version": {"type": "string"}}}


def test_the_state_of_a_pause_is_given_to_its_resume_in_another_process(store: BeamStore) -> None:
    ran: list[dict[str, Any]] = []
    first = Pausing(SCHEMA, ran)
    paused = _beam(store, first).invoke(invoke_body())
    assert paused.interrupted and first.given == [None]
    assert store.get_state(paused.interaction_id or "") is not None
    later = Pausing(SCHEMA, ran)  # a new process: nothing of the first runner's memory
    _beam(store, later).resume(resume_body(paused))
    kept = {"turn": 1, "asked": "deploy", "history": ["deploy v2?"]}
    assert ran == [{"state": kept, "args": {"version": "v2"}}] and later.given == [kept]
    assert store.get_state(paused.interaction_id or "") is None  # the run finished: nothing kept


def test_a_resume_that_finds_another_agent_fails_and_runs_nothing(store: BeamStore) -> None:
    ran: list[dict[str, Any]] = []
    paused = _beam(store, Pausing(SCHEMA, ran)).invoke(invoke_body())
    changed = Pausing({"type": "object", "properties": {"version": {"type": "integer"}}}, ran)
    _beam(store, changed).resume(resume_body(paused))
    assert ran == [] and changed.given == []  # the runner never ran
    run = store.list_runs(paused.interaction_id or "")[-1]
    assert run.status == "failed" and run.error is not None and run.error.code == "BEM-083"
    assert "'deploy' takes other args" in run.error.message
    assert store.get_state(paused.interaction_id or "") is None  # dropped with the failed run


class Large(Pausing):
    def run(self, input: AgentInput, emit: Emit) -> AgentResult:
        result = super().run(input, emit)
        large = {"history": "x" * 600_000}
        return result.model_copy(update={"state": large}) if result.action_required else result


def test_a_state_too_large_without_a_bucket_is_refused_and_nothing_is_left_pending() -> None:
    with mock_aws():
        store = DynamoBeamStore.connect(f"riverbeam-{uuid.uuid4().hex[:8]}", client=dynamodb_client())
        body = invoke_body()
        with pytest.raises(BeamError) as refused:
            _beam(store, Large(SCHEMA, [])).invoke(body)
        assert (refused.value.code, refused.value.status) == ("BEM-002", 413)
        assert store.list_session_actions(body["session_id"]) == []  # nothing asked, nothing pending
        [message] = store.list_messages(body["session_id"])  # the person's input, kept
        assert message.role == "human"

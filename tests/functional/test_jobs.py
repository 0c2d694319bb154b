"""Accepted steps run later by a worker: once per job whatever the deliveries; a dead worker's run is
closed failed and its tool is never run twice."""

from __future__ import annotations

from typing import Any

import pytest
from beam_store import BeamStore, InMemoryStore, Message, StepWrite, StoreBusy, ToolResultPart, utc_now
from riverbeam import AgentResult, BeamError, RiverBeam, RunJob

from tests.support.agents import FrameLog, author_beam, invoke_body, resume_body
from tests.support.stores import snapshot


def test_an_accepted_invoke_runs_when_its_job_runs_and_only_once(store: BeamStore) -> None:
    beam, _ = author_beam(store)
    job = beam.accept_invoke(invoke_body(stream=True))
    run = store.get_run(job.run_id)
    assert run is not None and run.status == "running" and run.claimed_by is None
    assert [m.role for m in store.list_messages(job.session_id)] == ["human"]

    frames = FrameLog()
    result = beam.run_job(
        job.model_dump_json(), worker_id="worker-1", on_frame=frames
    )  # as read off the queue
    assert isinstance(result, AgentResult) and result.interrupted
    assert frames.types()[0] == "run_started" and frames.types()[-1] == "done"
    assert [f.frame_seq for f in frames] == list(range(len(frames)))
    ended = store.get_run(job.run_id)
    assert ended is not None and ended.status == "interrupted" and ended.claimed_by == "worker-1"

    before = snapshot(store)
    again = FrameLog()
    assert beam.run_job(job, worker_id="worker-2", on_frame=again) is None  # a duplicate delivery
    assert snapshot(store) == before and len(again) == 0


def test_an_accepted_resume_is_resolved_at_once_and_its_tool_runs_once(store: BeamStore) -> None:
    beam, counter = author_beam(store)
    first = beam.invoke(invoke_body())
    assert isinstance(first, AgentResult)
    job = beam.accept_resume(resume_body(first))
    action = store.get_action(first.action_required[0].action_id or "")
    assert action is not None and action.status == "resolved" and action.resolved_run_id == job.run_id
    assert counter.pushed == []
    with pytest.raises(BeamError) as raised:  # resolved in the handler: a second resume loses at once
        beam.accept_resume(resume_body(first))
    assert raised.value.code == "BEM-066"

    assert beam.run_job(job) is not None
    assert beam.run_job(job) is None
    assert counter.pushed == ["docs/update"]
    action = store.get_action(first.action_required[0].action_id or "")
    assert action is not None and action.outcome is not None and action.outcome.status == "ok"


def test_a_job_claimed_by_a_live_worker_is_refused_for_later_delivery(store: BeamStore) -> None:
    beam, _ = author_beam(store)
    job = beam.accept_invoke(invoke_body(stream=True))
    store.claim_run(job.run_id, "worker-alive", "2099-01-01T00:00:00.000000Z", utc_now())
    before = snapshot(store)
    with pytest.raises(BeamError) as raised:
        beam.run_job(job, worker_id="worker-2")
    assert (raised.value.code, raised.value.status) == ("BEM-042", 409)
    assert snapshot(store) == before


def test_a_worker_killed_between_claim_and_outcome_never_runs_the_tool_twice(store: BeamStore) -> None:
    beam, counter = author_beam(store)
    first = beam.invoke(invoke_body())
    assert isinstance(first, AgentResult)
    job = beam.accept_resume(resume_body(first))
    # the first worker claimed the run, maybe ran the tool, and died: its lease has lapsed
    store.claim_run(job.run_id, "worker-dead", "2000-01-01T00:00:00.000000Z", utc_now())

    assert beam.run_job(RunJob.model_validate(job.model_dump()), worker_id="worker-2") is None
    assert counter.pushed == []
    run = store.get_run(job.run_id)
    assert (
        run is not None and run.status == "failed" and run.error is not None and run.error.code == "BEM-504"
    )
    action = store.get_action(first.action_required[0].action_id or "")
    assert action is not None and action.status == "resolved"
    assert action.outcome is not None and action.outcome.error is not None
    assert action.outcome.error.code == "BEM-334"
    last = store.list_messages(job.session_id)[-1]
    assert last.role == "tool" and isinstance(last.content[0], ToolResultPart)
    assert last.content[0].error is not None and last.content[0].error.code == "BEM-334"
    interaction = store.get_interaction(job.interaction_id)
    assert interaction is not None and interaction.status == "failed" and interaction.active_run_id is None

    assert beam.run_job(job) is None  # yet another delivery changes nothing
    with pytest.raises(BeamError) as raised:
        beam.resume(resume_body(first))
    assert raised.value.code == "BEM-066"
    assert counter.pushed == []


def test_a_malformed_job_is_bem001(store: BeamStore) -> None:
    beam, _ = author_beam(store)
    for bad in ("{", '{"kind": "invoke"}', '{"kind": "other", "agent_name": "a"}'):
        with pytest.raises(BeamError) as raised:
            beam.run_job(bad)
        assert raised.value.code == "BEM-001"


def test_a_stale_job_naming_an_action_another_run_resolved_runs_no_tool(store: BeamStore) -> None:
    beam, counter = author_beam(store)
    first = beam.invoke(invoke_body())
    assert isinstance(first, AgentResult)
    job = beam.accept_resume(resume_body(first))
    beam.run_job(job)
    assert counter.pushed == ["docs/update"]
    second = beam.invoke(invoke_body(first.session_id))
    assert isinstance(second, AgentResult)
    stale = beam.accept_resume(resume_body(second)).model_copy(update={"action_ids": job.action_ids})
    beam.run_job(stale)
    assert counter.pushed == ["docs/update"]


def test_a_worker_without_the_agent_closes_the_run_failed(store: BeamStore) -> None:
    beam, _ = author_beam(store)
    job = beam.accept_invoke(invoke_body(stream=True))
    other_worker = RiverBeam(store)  # deployed without the `author` agent
    with pytest.raises(BeamError) as raised:
        other_worker.run_job(job)
    assert raised.value.code == "BEM-021"
    run = store.get_run(job.run_id)
    assert (
        run is not None and run.status == "failed" and run.error is not None and run.error.code == "BEM-021"
    )
    interaction = store.get_interaction(job.interaction_id)
    assert interaction is not None and interaction.active_run_id is None


def test_a_store_outage_after_the_claim_fails_the_run_without_marking_tools_unknown() -> None:
    class ReadsFail(InMemoryStore):
        failing = False

        def get_session_with_messages(self, session_id: str, *, last: int | None = None) -> Any:
            if self.failing:
                raise StoreBusy("simulated")
            return super().get_session_with_messages(session_id, last=last)

    store = ReadsFail()
    beam, counter = author_beam(store)
    first = beam.invoke(invoke_body())
    assert isinstance(first, AgentResult)
    job = beam.accept_resume(resume_body(first))
    store.failing = True
    with pytest.raises(BeamError):
        beam.run_job(job)
    store.failing = False
    run = store.get_run(job.run_id)
    assert run is not None and run.status == "failed"
    action = store.get_action(job.action_ids[0])
    assert action is not None and action.outcome is None and counter.pushed == []


def test_when_the_closing_write_fails_the_fallback_keeps_the_tool_outcome() -> None:
    store = InMemoryStore()
    beam, counter = author_beam(store)
    first = beam.invoke(invoke_body())
    assert isinstance(first, AgentResult)
    job = beam.accept_resume(resume_body(first))
    beam.set_store(_Refusing(store))  # a store that refuses the close carrying the agent's reply
    beam.run_job(job)
    assert counter.pushed == ["docs/update"]
    action = store.get_action(job.action_ids[0])
    assert action is not None and action.outcome is not None and action.outcome.status == "ok"
    run = store.get_run(job.run_id)
    assert run is not None and run.status == "failed"
    assert [m.role for m in store.list_messages(job.session_id)][-1] == "tool"
    # the frames the refused closing write would have kept are written after all, ending in error, done
    kept = store.list_frames(job.run_id)
    assert [f["type"] for f in kept][-2:] == ["error", "done"]
    assert [f["frame_seq"] for f in kept] == list(range(len(kept)))


class _Refusing:
    """Delegates to a store but refuses closing writes that carry agent messages."""

    def __init__(self, inner: InMemoryStore) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def commit(self, step: StepWrite) -> list[Message]:
        if step.run_op == "close" and any(d.role == "ai" for d in step.messages):
            raise StoreBusy("simulated")
        return self.inner.commit(step)

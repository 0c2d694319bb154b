"""Retries are safe (CONTRACT 12), in process on every store: an invoke or a resume sent again with its
request_id gets the first answer and starts nothing; the same request_id with another request is 409
BEM-043, one still being answered 409 BEM-044; a request_id is the caller's own, and kept 24 hours."""

from __future__ import annotations

import threading
import uuid
from typing import Any

import pytest
from beam_store import BeamStore
from riverbeam import AgentResult, BeamError, RiverBeam, StreamAck

from tests.support.agents import FrameLog, author_beam, invoke_body, resume_body
from tests.support.clock import Clock, clocked
from tests.support.crash import ProcessDied, die_before_the_closing_write
from tests.support.stores import snapshot

# far above the milliseconds a run takes here, for a loaded machine
WAIT_SECONDS = 120.0


def rid() -> str:
    return str(uuid.uuid4())


def asked(beam: RiverBeam, **extra: Any) -> AgentResult:
    result = beam.invoke(invoke_body(**extra))
    assert isinstance(result, AgentResult) and result.interrupted
    return result


def runs_of(store: BeamStore, interaction_id: str | None) -> list[str]:
    return [r.run_id for r in store.list_runs(interaction_id or "")]


def refusal(call: Any, *args: Any) -> BeamError:
    with pytest.raises(BeamError) as refused:
        call(*args)
    return refused.value


def test_an_invoke_sent_again_gets_its_first_result_and_runs_nothing(store: BeamStore) -> None:
    beam, _ = author_beam(store)
    body = invoke_body(request_id=rid())
    first = beam.invoke(body)
    assert isinstance(first, AgentResult) and first.interrupted
    messages, actions = (
        store.list_messages(body["session_id"]),
        store.list_actions(first.interaction_id or ""),
    )
    again = beam.invoke(dict(body))
    assert isinstance(again, AgentResult)
    assert again.model_dump(mode="json") == first.model_dump(mode="json")
    assert runs_of(store, first.interaction_id) == [first.run_id]
    assert store.list_messages(body["session_id"]) == messages  # no second input, no second reply
    assert store.list_actions(first.interaction_id or "") == actions


def test_a_streamed_invoke_sent_again_gets_its_first_stream_ack(store: BeamStore) -> None:
    beam, _ = author_beam(store)
    body = invoke_body(request_id=rid(), stream=True)
    first_frames, again_frames = FrameLog(), FrameLog()
    first = beam.invoke(body, on_frame=first_frames)
    again = beam.invoke(body, on_frame=again_frames)
    assert isinstance(first, StreamAck) and again == first
    assert first_frames.types()[-1] == "done" and again_frames == []  # nothing ran again
    assert runs_of(store, first.interaction_id) == [first.run_id]
    job = beam.accept_invoke(body)  # the deployed split's API part answers it alike
    assert job.ack() == first


def test_a_resume_sent_again_gets_its_first_stream_ack_and_runs_the_tool_once(store: BeamStore) -> None:
    beam, counter = author_beam(store)
    result = asked(beam)
    body = resume_body(result)
    first = beam.resume(body)
    messages = store.list_messages(result.session_id or "")
    again_frames = FrameLog()
    again = beam.resume(body, on_frame=again_frames)
    assert again == first and again_frames == []
    assert counter.pushed == ["docs/update"]
    assert runs_of(store, result.interaction_id) == [result.run_id, first.run_id]
    assert store.list_messages(result.session_id or "") == messages
    assert beam.accept_resume(body).ack() == first
    # the same answer without its request_ids is a new resume, refused as ever
    fresh = resume_body(result)
    assert refusal(beam.resume, fresh).code == "BEM-066"


def test_a_cancelled_resume_sent_again_is_answered_alike(store: BeamStore) -> None:
    beam, counter = author_beam(store)
    result = asked(beam)
    body = resume_body(result, status="cancelled", reason="not today")
    first = beam.resume(body)
    assert beam.resume(body) == first and counter.pushed == []


def test_a_request_id_sent_with_another_request_is_refused_409_and_changes_nothing(store: BeamStore) -> None:
    beam, _ = author_beam(store)
    body = invoke_body(request_id=rid())
    first = beam.invoke(body)
    assert isinstance(first, AgentResult)
    before = snapshot(store)
    other = refusal(beam.invoke, {**body, "content": [{"type": "text", "text": "Push main"}]})
    assert (other.code, other.status, other.field) == ("BEM-043", 409, "request_id")
    # another session, or the same request streamed, is another request too
    assert refusal(beam.invoke, {**body, "session_id": rid()}).code == "BEM-043"
    assert refusal(beam.invoke, {**body, "stream": True}).code == "BEM-043"
    assert snapshot(store) == before

    resume = resume_body(first)
    beam.resume(resume)
    before = snapshot(store)
    (envelope,) = resume["actions"]
    changed = {**resume, "actions": [{**envelope, "status": "cancelled"}]}
    refused = refusal(beam.resume, changed)
    assert (refused.code, refused.status) == ("BEM-043", 409)
    assert refusal(beam.resume, {**resume, "content": [{"type": "text", "text": "now"}]}).code == "BEM-043"
    assert snapshot(store) == before


def test_the_same_request_sent_again_with_its_defaults_spelt_out_is_the_same(store: BeamStore) -> None:
    beam, _ = author_beam(store)
    body = invoke_body(request_id=rid())
    first = beam.invoke(body)
    spelt = {**body, "stream": False, "session_id": body["session_id"].upper(), "interaction_id": None}
    again = beam.invoke({**spelt, "request_id": body["request_id"].upper()})
    assert isinstance(first, AgentResult) and isinstance(again, AgentResult) and again.run_id == first.run_id


def test_another_users_same_request_id_is_their_own(store: BeamStore) -> None:
    beam, _ = author_beam(store)
    request_id = rid()
    mine = beam.invoke(invoke_body(request_id=request_id))
    theirs = beam.invoke(invoke_body(user="u2", request_id=request_id))  # the same id: not refused
    assert isinstance(mine, AgentResult) and isinstance(theirs, AgentResult)
    assert theirs.run_id != mine.run_id and theirs.session_id != mine.session_id
    again = beam.invoke(invoke_body(user="u2", request_id=request_id, session_id=theirs.session_id))
    assert isinstance(again, AgentResult) and again.run_id == theirs.run_id  # theirs, never mine


def test_a_request_id_is_kept_24_hours(store: BeamStore) -> None:
    clock = Clock()
    beam, counter = clocked(store, clock)
    body = invoke_body(request_id=rid())
    first = beam.invoke(body)
    assert isinstance(first, AgentResult)
    clock.advance(hours=23, minutes=59)
    again = beam.invoke(body)
    assert isinstance(again, AgentResult) and again.run_id == first.run_id
    resume = resume_body(first)
    acked = beam.resume(resume)
    clock.advance(minutes=1)  # the invoke's record is 24 hours old: ignored, though still stored
    later = beam.invoke(body)
    assert isinstance(later, AgentResult) and later.run_id != first.run_id
    assert len(store.list_messages(body["session_id"])) > 5
    clock.advance(hours=24)  # the resume's first answer too: a new resume of a resolved action
    assert refusal(beam.resume, resume).code == "BEM-066"
    assert counter.pushed == ["docs/update"] and acked.run_id != later.run_id


def test_a_refused_request_frees_its_request_id(store: BeamStore) -> None:
    beam, _ = author_beam(store)
    body = invoke_body(request_id=rid(), interaction_id=rid())  # an interaction that does not exist
    before = snapshot(store)
    assert refusal(beam.invoke, body).code == "BEM-022"
    assert refusal(beam.invoke, body).code == "BEM-022"  # answered afresh, not BEM-044
    assert snapshot(store) == before  # no record left behind
    fixed = {k: v for k, v in body.items() if k != "interaction_id"}  # the same request_id, corrected
    assert isinstance(beam.invoke(fixed), AgentResult)


def test_a_request_id_that_is_no_uuid_is_bem_001_naming_it(store: BeamStore) -> None:
    beam, _ = author_beam(store)
    refused = refusal(beam.invoke, invoke_body(request_id="retry-1"))
    assert (refused.code, refused.field) == ("BEM-001", "request_id")


def test_a_request_sent_again_while_it_is_answered_is_409_bem_044(store: BeamStore) -> None:
    beam, _ = author_beam(store)
    started, release = threading.Event(), threading.Event()
    runner = beam._setup.agents["author"]

    class Slow:
        def run(self, input: Any, emit: Any) -> Any:
            started.set()
            assert release.wait(WAIT_SECONDS)
            return runner.run(input, emit)

    beam.register_agent("author", Slow())  # type: ignore[arg-type]
    body = invoke_body(request_id=rid())
    answers: list[Any] = []
    first = threading.Thread(target=lambda: answers.append(beam.invoke(body)))
    first.start()
    try:
        assert started.wait(WAIT_SECONDS)
        busy = refusal(beam.invoke, body)
        assert (busy.code, busy.status, busy.field) == ("BEM-044", 409, "request_id")
    finally:
        release.set()
        first.join(WAIT_SECONDS)
    (result,) = answers
    assert isinstance(result, AgentResult)
    again = beam.invoke(body)
    assert isinstance(again, AgentResult) and again.run_id == result.run_id


def test_a_claim_whose_process_died_is_answered_afresh_after_its_lease(
    store: BeamStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = Clock()
    beam, _ = clocked(store, clock)
    body = invoke_body(request_id=rid())
    died = die_before_the_closing_write(monkeypatch, "the process ends mid-run")
    with pytest.raises(ProcessDied):  # not a failure the pipeline sees: the claim stays, unanswered
        beam.invoke(body)
    assert died
    assert refusal(beam.invoke, body).code == "BEM-044"
    clock.advance(seconds=beam._setup.request_lease_seconds)
    again = beam.invoke(body)
    assert isinstance(again, AgentResult) and again.interrupted

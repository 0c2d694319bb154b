"""Retries under real concurrency, on the embedded DynamoDB-compatible server on 127.0.0.1 (and the other
stores): of N requests sent at once with one request_id, exactly one starts a run; every other gets the
same answer, or BEM-044 while the first is still being answered. A resume sent N times at once runs its
tool once, and every copy gets the first StreamAck.

The bound is far above a normal run (a race takes seconds), so a slow or loaded machine makes these tests
slower, never red."""

from __future__ import annotations

import uuid
from collections import Counter
from typing import Any

import pytest
from beam_store import BeamStore
from riverbeam import AgentResult, BeamError, RunJob, StreamAck

from tests.support.agents import author_beam, invoke_body, resume_body
from tests.support.concurrency import race

TEST_TIMEOUT_SECONDS = 1200
THREADS = 8
TRIALS = 3


def _codes(outcomes: list[Any]) -> Counter[str]:
    return Counter(o.code for o in outcomes if isinstance(o, BeamError))


@pytest.mark.realserver
@pytest.mark.timeout(TEST_TIMEOUT_SECONDS)
def test_concurrent_invokes_with_one_request_id_start_one_run(store: BeamStore) -> None:
    beam, _ = author_beam(store)
    for trial in range(TRIALS):
        body = invoke_body(request_id=str(uuid.uuid4()))
        outcomes = race(THREADS, lambda _k, body=body: beam.invoke(body))  # type: ignore[misc]
        results = [o for o in outcomes if isinstance(o, AgentResult)]
        codes = _codes(outcomes)
        assert results, f"trial {trial}: nobody answered, {codes}"
        assert set(codes) <= {"BEM-044"}, f"trial {trial}: {codes}"
        assert len(results) + codes["BEM-044"] == THREADS
        first = results[0].model_dump(mode="json")
        assert all(r.model_dump(mode="json") == first for r in results), f"trial {trial}: answers differ"
        messages = store.list_messages(body["session_id"])
        assert [m.role for m in messages] == ["human", "ai"], f"trial {trial}: {len(messages)} messages"
        assert {m.run_id for m in messages} == {first["run_id"]}
        again = beam.invoke(body)  # once answered, every retry gets the answer
        assert isinstance(again, AgentResult) and again.model_dump(mode="json") == first


@pytest.mark.realserver
@pytest.mark.timeout(TEST_TIMEOUT_SECONDS)
def test_concurrent_streamed_invokes_with_one_request_id_hand_off_one_job(store: BeamStore) -> None:
    beam, _ = author_beam(store)
    for trial in range(TRIALS):
        body = invoke_body(request_id=str(uuid.uuid4()), stream=True)
        queued: list[RunJob] = []  # list.append is atomic: threads may hand off at once

        def accept(_k: int, body: dict[str, Any] = body, queued: list[RunJob] = queued) -> RunJob:
            return beam.accept_invoke(body, hand_off=queued.append)

        outcomes = race(THREADS, accept)
        jobs = [o for o in outcomes if isinstance(o, RunJob)]
        codes = _codes(outcomes)
        assert len(queued) == 1, f"trial {trial}: {len(queued)} jobs queued"
        assert set(codes) <= {"BEM-044"} and len(jobs) + codes["BEM-044"] == THREADS, (
            f"trial {trial}: {codes}"
        )
        assert {j.ack().model_dump_json() for j in jobs} == {queued[0].ack().model_dump_json()}
        assert [m.run_id for m in store.list_messages(body["session_id"])] == [queued[0].run_id]


@pytest.mark.realserver
@pytest.mark.timeout(TEST_TIMEOUT_SECONDS)
def test_concurrent_copies_of_one_resume_run_its_tool_once(store: BeamStore) -> None:
    beam, counter = author_beam(store)
    for trial in range(TRIALS):
        result = beam.invoke(invoke_body())
        assert isinstance(result, AgentResult) and result.interrupted
        body = resume_body(result)
        outcomes = race(2 * THREADS, lambda _k, body=body: beam.resume(body))  # type: ignore[misc]
        acks = [o for o in outcomes if isinstance(o, StreamAck)]
        assert len(acks) == 2 * THREADS, f"trial {trial}: {_codes(outcomes)}"
        assert len({a.model_dump_json() for a in acks}) == 1
        assert len(counter.pushed) == trial + 1, (
            f"trial {trial}: the tool ran {len(counter.pushed) - trial} times"
        )
        runs = store.list_runs(result.interaction_id or "")
        assert [r.run_id for r in runs] == [result.run_id, acks[0].run_id], f"trial {trial}: {len(runs)} runs"

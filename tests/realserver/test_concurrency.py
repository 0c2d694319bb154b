"""The promises under real concurrency: on a DynamoDB-compatible server on 127.0.0.1, and on the other
stores."""

from __future__ import annotations

import threading
import uuid
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from beam_store import BeamStore
from riverbeam import AgentResult, BeamError, RiverBeam, StreamAck

from tests.support.agents import PushCounter, author_beam, invoke_body, resume_body

THREAD_TIMEOUT_SECONDS = 60


def race(threads: int, work: Callable[[int], Any]) -> list[Any]:
    """Run `work` in `threads` threads released together; each returns its value or the BeamError."""
    barrier = threading.Barrier(threads, timeout=THREAD_TIMEOUT_SECONDS)

    def one(k: int) -> Any:
        barrier.wait()
        try:
            return work(k)
        except BeamError as error:
            return error

    with ThreadPoolExecutor(max_workers=threads) as pool:
        futures = [pool.submit(one, k) for k in range(threads)]
        return [f.result(timeout=THREAD_TIMEOUT_SECONDS) for f in futures]


@pytest.mark.realserver
@pytest.mark.timeout(600)
def test_sixteen_concurrent_resumes_of_one_action_have_one_winner(store: BeamStore) -> None:
    trials = 50
    counter = PushCounter()
    beam, _ = author_beam(store, counter)
    for trial in range(trials):
        result = beam.invoke(invoke_body())
        assert isinstance(result, AgentResult)
        body = resume_body(result)
        outcomes = race(16, lambda _k, body=body: beam.resume(body))  # type: ignore[misc]
        winners = [o for o in outcomes if isinstance(o, StreamAck)]
        codes = Counter(o.code for o in outcomes if isinstance(o, BeamError))
        assert len(winners) == 1, f"trial {trial}: {len(winners)} winners, {codes}"
        assert codes == {"BEM-066": 15}, f"trial {trial}: {codes}"
        assert len(counter.pushed) == trial + 1, (
            f"trial {trial}: the tool ran {len(counter.pushed) - trial} times"
        )
        action = store.get_action(result.action_required[0].action_id or "")
        assert action is not None and action.status == "resolved"
        assert action.resolved_run_id == winners[0].run_id
        runs = store.list_runs(result.interaction_id or "")
        assert len(runs) == 2  # the invoke and the winning resume; no loser left a run behind


@pytest.mark.realserver
@pytest.mark.timeout(600)
def test_eight_writers_to_one_session_get_dense_unique_seqs(store: BeamStore) -> None:
    class Silent:
        """Stores nothing but the input message, so each invoke appends exactly one message."""

        def run(self, input: Any, emit: Any) -> AgentResult:
            return AgentResult()

    beam = RiverBeam(store)
    beam.register_agent("author", Silent())
    session_id = str(uuid.uuid4())
    beam.invoke(invoke_body(session_id, text="w-start"))  # the session exists before the race

    def writer(k: int) -> None:
        for i in range(25):
            beam.invoke(invoke_body(session_id, text=f"w{k}-{i}"))

    outcomes = race(8, writer)
    assert [o for o in outcomes if o is not None] == []
    messages = store.list_messages(session_id)
    assert [m.seq for m in messages] == list(range(1, 202))
    texts = [m.content[0].text for m in messages[1:]]  # type: ignore[union-attr]
    assert sorted(texts) == sorted(f"w{k}-{i}" for k in range(8) for i in range(25))
    for k in range(8):  # each writer's messages are in its write order
        mine = [t for t in texts if t.startswith(f"w{k}-")]
        assert mine == [f"w{k}-{i}" for i in range(25)]
    session = store.get_session(session_id)
    assert session is not None and session.last_seq == 201


@pytest.mark.realserver
@pytest.mark.timeout(300)
def test_concurrent_first_invokes_of_a_new_session_keep_one_owner(store: BeamStore) -> None:
    beam, _ = author_beam(store, PushCounter())
    for _ in range(10):
        session_id = str(uuid.uuid4())
        users = [f"user{k}" for k in range(4)]
        outcomes = race(
            4, lambda k, sid=session_id, users=users: beam.invoke(invoke_body(sid, user=users[k]))
        )  # type: ignore[misc]
        session = store.get_session(session_id)
        assert session is not None
        won = [o for o in outcomes if isinstance(o, AgentResult)]
        assert len(won) == 1 and won[0].session_id == session_id
        assert Counter(o.code for o in outcomes if isinstance(o, BeamError)) == {"BEM-031": 3}
        owner_messages = store.list_messages(session_id)
        assert {m.interaction_id for m in owner_messages} == {won[0].interaction_id}
        assert session.user_id == users[outcomes.index(won[0])]

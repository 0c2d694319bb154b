"""The concurrency promises as scenarios of any size: the suite runs a few trials of each
(tests/realserver/test_concurrency.py), the soak script as many as asked (bench/soak_concurrency.py).

Each scenario asserts its promises in every trial (an AssertionError names the trial) and returns its
figures. Nothing here depends on the machine's speed but the bound on one race, which is far above what
a race takes (seconds): a slow or loaded machine makes a scenario slower, never failed.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

from beam_store import BeamStore
from riverbeam import AgentResult, BeamError, RiverBeam, StreamAck

from tests.support.agents import PushCounter, author_beam, invoke_body, resume_body

# the longest one race may take, all its threads together (a race takes seconds; this catches a hang)
RACE_TIMEOUT_SECONDS = 600.0


def race(threads: int, work: Callable[[int], Any], timeout: float = RACE_TIMEOUT_SECONDS) -> list[Any]:
    """Run `work` in `threads` threads released together; each returns its value or the BeamError."""
    barrier = threading.Barrier(threads, timeout=timeout)

    def one(k: int) -> Any:
        barrier.wait()
        try:
            return work(k)
        except BeamError as error:
            return error

    pool = ThreadPoolExecutor(max_workers=threads)
    try:
        futures = [pool.submit(one, k) for k in range(threads)]
        _, pending = wait(futures, timeout=timeout)
        if pending:
            raise TimeoutError(f"{len(pending)} of {threads} threads still running after {timeout:.0f}s")
        return [f.result() for f in futures]
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


@dataclass
class Figures:
    """What a scenario saw over its trials."""

    name: str
    trials: int = 0
    winners: Counter[int] = field(default_factory=Counter)  # trials by their count of winners
    codes: Counter[str] = field(default_factory=Counter)  # the losers' BeamError codes
    tool_runs: int = 0
    messages: int = 0
    seconds: float = 0.0

    def line(self) -> str:
        winners = sum(n * trials for n, trials in self.winners.items()) if self.winners else "-"
        codes = " ".join(f"{c}x{n}" for c, n in sorted(self.codes.items())) or "-"
        return (
            f"{self.name:<30} trials {self.trials:<5} winners {winners:<5} codes {codes:<14}"
            f" tool runs {self.tool_runs:<5} messages {self.messages:<7} {self.seconds:7.1f} s"
        )


def resumes_of_one_action(store: BeamStore, trials: int, threads: int = 16) -> Figures:
    """`threads` resumes of one pending action at once, each with a request_id of its own (distinct
    resumes, not copies of one: see tests/realserver/test_retry_races.py), `trials` times: one wins
    (StreamAck), every other is refused BEM-066, the tool runs once, the action is resolved by the
    winner's run, and no loser leaves a run behind."""
    figures = Figures(f"resumes ({threads} of one action)")
    counter = PushCounter()
    beam, _ = author_beam(store, counter)
    started = time.monotonic()
    for trial in range(trials):
        result = beam.invoke(invoke_body())
        assert isinstance(result, AgentResult), f"trial {trial}: {result!r}"
        bodies = [resume_body(result) for _ in range(threads)]
        outcomes = race(threads, lambda k, bodies=bodies: beam.resume(bodies[k]))  # type: ignore[misc]
        winners = [o for o in outcomes if isinstance(o, StreamAck)]
        codes = Counter(o.code for o in outcomes if isinstance(o, BeamError))
        assert len(winners) == 1, f"trial {trial}: {len(winners)} winners, {codes}"
        assert codes == {"BEM-066": threads - 1}, f"trial {trial}: {codes}"
        assert len(counter.pushed) == trial + 1, (
            f"trial {trial}: the tool ran {len(counter.pushed) - trial} times"
        )
        action = store.get_action(result.action_required[0].action_id or "")
        assert action is not None and action.status == "resolved", f"trial {trial}: {action!r}"
        assert action.resolved_run_id == winners[0].run_id, f"trial {trial}: resolved by another run"
        runs = store.list_runs(result.interaction_id or "")
        assert len(runs) == 2, f"trial {trial}: {len(runs)} runs"  # the invoke and the winning resume
        figures.trials += 1
        figures.winners[len(winners)] += 1
        figures.codes.update(codes)
    figures.tool_runs = len(counter.pushed)
    figures.seconds = time.monotonic() - started
    return figures


class Silent:
    """A runner that stores nothing but the input message, so each invoke appends exactly one message."""

    def run(self, input: Any, emit: Any) -> AgentResult:
        return AgentResult()


def writers_to_one_session(store: BeamStore, trials: int, writers: int = 8, messages: int = 25) -> Figures:
    """`writers` threads each appending `messages` messages to one session at once, `trials` sessions:
    the seqs are exactly 1..N (dense, unique), every message is stored once, each writer's in its order,
    and the session's counter is N."""
    figures = Figures(f"writers ({writers} x {messages} messages)")
    beam = RiverBeam(store)
    beam.register_agent("author", Silent())
    started = time.monotonic()
    for trial in range(trials):
        session_id = str(uuid.uuid4())
        beam.invoke(invoke_body(session_id, text="w-start"))  # the session exists before the race

        def writer(k: int, session_id: str = session_id) -> None:
            for i in range(messages):
                beam.invoke(invoke_body(session_id, text=f"w{k}-{i}"))

        outcomes = race(writers, writer)
        failures = [o for o in outcomes if o is not None]
        assert failures == [], f"trial {trial}: {failures}"
        total = writers * messages + 1
        stored = store.list_messages(session_id)
        assert [m.seq for m in stored] == list(range(1, total + 1)), f"trial {trial}: seqs not 1..{total}"
        texts = [m.content[0].text for m in stored[1:]]  # type: ignore[union-attr]
        assert sorted(texts) == sorted(f"w{k}-{i}" for k in range(writers) for i in range(messages))
        for k in range(writers):  # each writer's messages are in its write order
            mine = [t for t in texts if t.startswith(f"w{k}-")]
            assert mine == [f"w{k}-{i}" for i in range(messages)], f"trial {trial}: writer {k} out of order"
        session = store.get_session(session_id)
        assert session is not None and session.last_seq == total, f"trial {trial}: {session!r}"
        figures.trials += 1
        figures.messages += len(stored)
    figures.seconds = time.monotonic() - started
    return figures


def first_invokes_of_a_new_session(store: BeamStore, trials: int, users: int = 4) -> Figures:
    """`users` different users invoking one new session at once, `trials` times: one owns it, the others
    are refused BEM-031, and the session holds the owner's messages only."""
    figures = Figures(f"first invokes ({users} users)")
    beam, counter = author_beam(store, PushCounter())
    started = time.monotonic()
    for trial in range(trials):
        session_id = str(uuid.uuid4())
        names = [f"user{k}" for k in range(users)]
        outcomes = race(
            users, lambda k, sid=session_id, names=names: beam.invoke(invoke_body(sid, user=names[k]))
        )  # type: ignore[misc]
        session = store.get_session(session_id)
        assert session is not None, f"trial {trial}: no session"
        won = [o for o in outcomes if isinstance(o, AgentResult)]
        codes = Counter(o.code for o in outcomes if isinstance(o, BeamError))
        assert len(won) == 1 and won[0].session_id == session_id, f"trial {trial}: {len(won)} owners, {codes}"
        assert codes == {"BEM-031": users - 1}, f"trial {trial}: {codes}"
        owner_messages = store.list_messages(session_id)
        assert {m.interaction_id for m in owner_messages} == {won[0].interaction_id}, f"trial {trial}"
        assert session.user_id == names[outcomes.index(won[0])], f"trial {trial}: owned by {session.user_id}"
        figures.trials += 1
        figures.winners[len(won)] += 1
        figures.codes.update(codes)
        figures.messages += len(owner_messages)
    figures.tool_runs = len(counter.pushed)
    figures.seconds = time.monotonic() - started
    return figures

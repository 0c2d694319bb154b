"""The promises under real concurrency: on a DynamoDB-compatible server on 127.0.0.1, and on the other
stores. A few trials of each scenario of tests/support/concurrency.py, which asserts the promises in every
trial; `bench/soak_concurrency.py --trials N` runs as many as wanted and prints the figures.

The bounds are far above a normal run (a race takes seconds; each test well under a minute), so a slow or
loaded machine makes these tests slower, never red."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from beam_store import BeamStore, InMemoryStore

from tests.support.concurrency import (
    first_invokes_of_a_new_session,
    resumes_of_one_action,
    writers_to_one_session,
)

# far above the few seconds to a minute these take, loaded or not: only a hang reaches it
TEST_TIMEOUT_SECONDS = 1200
RESUME_TRIALS = 3
WRITERS, MESSAGES_PER_WRITER = 8, 5
FIRST_INVOKE_TRIALS = 3
# each store call this much slower, one at a time: 125 calls of the writers' race take ~15 s (8 x 25
# messages, the suite's size before, took over 70 s this way and failed on its 60 s bound)
SLOW_CALL_SECONDS = 0.12


@pytest.mark.realserver
@pytest.mark.timeout(TEST_TIMEOUT_SECONDS)
def test_sixteen_concurrent_resumes_of_one_action_have_one_winner(store: BeamStore) -> None:
    figures = resumes_of_one_action(store, RESUME_TRIALS, threads=16)
    assert figures.trials == RESUME_TRIALS and figures.winners == {1: RESUME_TRIALS}
    assert figures.codes == {"BEM-066": 15 * RESUME_TRIALS}
    assert figures.tool_runs == RESUME_TRIALS  # once per action


@pytest.mark.realserver
@pytest.mark.timeout(TEST_TIMEOUT_SECONDS)
def test_eight_writers_to_one_session_get_dense_unique_seqs(store: BeamStore) -> None:
    figures = writers_to_one_session(store, 1, writers=WRITERS, messages=MESSAGES_PER_WRITER)
    assert figures.trials == 1 and figures.messages == WRITERS * MESSAGES_PER_WRITER + 1


@pytest.mark.realserver
@pytest.mark.timeout(TEST_TIMEOUT_SECONDS)
def test_concurrent_first_invokes_of_a_new_session_keep_one_owner(store: BeamStore) -> None:
    figures = first_invokes_of_a_new_session(store, FIRST_INVOKE_TRIALS, users=4)
    assert figures.trials == FIRST_INVOKE_TRIALS and figures.winners == {1: FIRST_INVOKE_TRIALS}
    assert figures.codes == {"BEM-031": 3 * FIRST_INVOKE_TRIALS} and figures.tool_runs == 0


class SlowStore:
    """`inner` with every call `delay` seconds slower and one call at a time: the serialized store servers
    of the suite on a machine so loaded that each request waits its turn."""

    def __init__(self, inner: BeamStore, delay: float) -> None:
        self._inner, self._delay, self._lock = inner, delay, threading.Lock()

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if not callable(attr):
            return attr

        def slow(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                time.sleep(self._delay)
                return attr(*args, **kwargs)

        return slow


@pytest.mark.timeout(TEST_TIMEOUT_SECONDS)
def test_a_slow_machine_makes_the_writers_race_slower_not_red() -> None:
    store: Any = SlowStore(InMemoryStore(), SLOW_CALL_SECONDS)
    figures = writers_to_one_session(store, 1, writers=WRITERS, messages=MESSAGES_PER_WRITER)
    assert figures.trials == 1 and figures.messages == WRITERS * MESSAGES_PER_WRITER + 1

"""`claim_run`: a running run is claimed once, by one worker. Run on every store (the `store` fixture of
tests/conftest.py)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from beam_store import (
    BeamStore,
    RunClaimed,
    RunNotRunning,
    utc_now,
)

from tests.support import steps
from tests.support.contract import sid

# far above the milliseconds a race of 8 claims takes, loaded or not: only a hang reaches it
RACE_TIMEOUT_SECONDS = 600


def test_a_running_run_is_claimed_once(store: BeamStore) -> None:
    s = steps.session(sid())
    i = steps.interaction(s.session_id)
    step, r = steps.begin(s, i)
    store.commit(step)
    claimed = store.claim_run(r.run_id, "worker-a", "2099-01-01T00:00:00.000000Z", utc_now())
    assert (claimed.claimed_by, claimed.lease_expires_at) == ("worker-a", "2099-01-01T00:00:00.000000Z")
    stored = store.get_run(r.run_id)
    assert stored is not None and stored.claimed_by == "worker-a" and stored.status == "running"
    with pytest.raises(RunClaimed) as refused:
        store.claim_run(r.run_id, "worker-b", "2099-01-01T00:00:00.000000Z", utc_now())
    assert refused.value.current.claimed_by == "worker-a"
    store.commit(steps.close(s, i, r))
    with pytest.raises(RunNotRunning):
        store.claim_run(r.run_id, "worker-c", "2099-01-01T00:00:00.000000Z", utc_now())
    with pytest.raises(RunNotRunning):
        store.claim_run(sid(), "worker-c", "2099-01-01T00:00:00.000000Z", utc_now())


def test_concurrent_claims_of_one_run_have_one_winner(store: BeamStore) -> None:
    s = steps.session(sid())
    i = steps.interaction(s.session_id)
    step, r = steps.begin(s, i)
    store.commit(step)
    barrier = threading.Barrier(8, timeout=RACE_TIMEOUT_SECONDS)

    def claim(k: int) -> str:
        barrier.wait()
        try:
            store.claim_run(r.run_id, f"worker-{k}", "2099-01-01T00:00:00.000000Z", utc_now())
            return "won"
        except RunClaimed:
            return "lost"

    with ThreadPoolExecutor(max_workers=8) as pool:
        outcomes = list(pool.map(claim, range(8), timeout=RACE_TIMEOUT_SECONDS))
    assert sorted(outcomes) == ["lost"] * 7 + ["won"]

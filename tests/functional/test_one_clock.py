"""One clock: every record an approval loop writes (a subscription, the session, the interaction, the runs,
their messages, the action and its answer, a worker's claim) is stamped by the RiverBeam's clock, so a test
that sets the time sees it everywhere. TTLs (epoch seconds DynamoDB deletes by) stay on the wall clock."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

import pytest
from beam_store import BeamStore, InMemoryStore
from riverbeam import AgentResult
from riverbeam.models import AuthContext

from tests.support.agents import invoke_body, resume_body
from tests.support.clock import T0, Clock, clocked, iso
from tests.support.stores import moto_store

LEASE_SECONDS = 600


@contextmanager
def a_store(kind: str) -> Iterator[BeamStore]:
    if kind == "memory":
        yield InMemoryStore()
    else:
        with moto_store() as store:
            yield store


@pytest.mark.parametrize("kind", ["memory", "moto"])
def test_every_record_of_a_loop_is_stamped_by_the_beams_clock(kind: str) -> None:
    clock = Clock()
    answered_at = T0 + timedelta(minutes=5)
    session_id = str(uuid.uuid4())
    with a_store(kind) as store:
        beam, counter = clocked(store, clock)
        beam.subscribe("connection-1", session_id, AuthContext(user_id="u1"))
        first = beam.invoke(invoke_body(session_id))
        assert isinstance(first, AgentResult) and first.interrupted
        clock.advance(minutes=5)
        job = beam.accept_resume(resume_body(first))
        beam.run_job(job, worker_id="worker-1", lease_seconds=LEASE_SECONDS)
        assert counter.pushed == ["docs/update"]

        connection = store.get_connection("connection-1")
        assert connection is not None and connection.connected_at == iso(T0)
        assert abs(connection.expires_at - (time.time() + 2 * 3600 + 600)) < 3600  # the wall's
        session = store.get_session(session_id)
        interaction = store.get_interaction(first.interaction_id)
        assert session is not None and session.created_at == iso(T0)
        assert interaction is not None and interaction.created_at == iso(T0)
        opened, resumed = store.get_run(first.run_id), store.get_run(job.run_id)
        assert opened is not None and (opened.created_at, opened.ended_at) == (iso(T0), iso(T0))
        assert resumed is not None and resumed.created_at == iso(answered_at)
        assert (resumed.ended_at, resumed.claimed_by) == (iso(answered_at), "worker-1")
        assert resumed.lease_expires_at == iso(answered_at + timedelta(seconds=LEASE_SECONDS))
        action = store.get_action(first.action_required[0].action_id or "")
        assert action is not None and action.created_at == iso(T0)
        assert action.response is not None and action.response.when == iso(answered_at)
        stamps = {m.run_id: m.created_at for m in store.list_messages(session_id)}
        assert stamps == {first.run_id: iso(T0), job.run_id: iso(answered_at)}

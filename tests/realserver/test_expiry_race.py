"""A resume racing the expiry of its action has exactly one outcome (issue 13): on the DynamoDB-compatible
server (and the other stores), two beams on one store, one whose clock is before the action's expires_at
(its resume resolves it) and one whose clock is past it (its resume expires it), released together."""

from __future__ import annotations

from datetime import timedelta

import pytest
from beam_store import BeamStore
from riverbeam import AgentResult, BeamError, EventLog, RiverBeam, StreamAck

from tests.support.agents import FrameLog, invoke_body, resume_body
from tests.support.clock import T0, Clock, sharing_author
from tests.support.concurrency import race

TRIALS = 4


@pytest.mark.realserver
@pytest.mark.timeout(600)
def test_a_resume_racing_the_expiry_has_one_outcome(store: BeamStore) -> None:
    (early, late), counter = sharing_author(store, [Clock(), Clock(T0 + timedelta(days=1))])
    outcomes = []
    for trial in range(TRIALS):
        result = early.invoke(invoke_body())
        assert isinstance(result, AgentResult) and result.interrupted
        action_id = str(result.action_required[0].action_id)
        body = resume_body(result)
        answers = race(2, lambda k, body=body: (early, late)[k].resume(body))
        stored = store.get_action(action_id)
        assert stored is not None and stored.status in ("resolved", "expired"), trial
        if stored.status == "resolved":
            assert isinstance(answers[0], StreamAck), (trial, answers)
            assert isinstance(answers[1], BeamError) and answers[1].code == "BEM-066", (trial, answers)
        else:
            assert isinstance(answers[1], BeamError) and answers[1].code == "BEM-070", (trial, answers)
            assert isinstance(answers[0], BeamError) and answers[0].code == "BEM-070", (trial, answers)
        outcomes.append(stored.status)
    # the tool ran once for each action resolved, never for one expired
    assert len(counter.pushed) == outcomes.count("resolved")


@pytest.mark.realserver
@pytest.mark.timeout(600)
def test_a_resume_racing_the_sweep_has_one_outcome(store: BeamStore) -> None:
    """The sweep (a beam whose clock is past the action's time) and a resume in time, released together:
    the action ends resolved (the resume's StreamAck, the sweep expired nothing) or expired (the sweep
    returns it, the resume is refused 410); never both, and the tool runs only for the first."""
    (early, late), counter = sharing_author(store, [Clock(), Clock(T0 + timedelta(days=1))])
    outcomes = []
    for trial in range(TRIALS):
        result = early.invoke(invoke_body())
        assert isinstance(result, AgentResult) and result.interrupted
        action_id = str(result.action_required[0].action_id)
        body = resume_body(result)
        answers = race(2, lambda k, body=body: early.resume(body) if k == 0 else late.sweep_expired())
        stored = store.get_action(action_id)
        assert stored is not None and stored.status in ("resolved", "expired"), trial
        swept = [a.action_id for a in answers[1]]
        if stored.status == "resolved":
            assert isinstance(answers[0], StreamAck) and swept == [], (trial, answers)
        else:
            assert swept == [action_id], (trial, answers)
            assert isinstance(answers[0], BeamError) and answers[0].code == "BEM-070", (trial, answers)
        outcomes.append(stored.status)
    assert len(counter.pushed) == outcomes.count("resolved")


@pytest.mark.realserver
@pytest.mark.timeout(600)
def test_two_sweeps_expire_each_action_once(store: BeamStore) -> None:
    """Two sweeps at once (a schedule's runs may overlap): each action is expired, told and sent by one."""
    (early,), _ = sharing_author(store, [Clock()])
    log = EventLog()
    sweeps = [RiverBeam(store, clock=lambda: T0 + timedelta(days=1), events=log) for _ in range(2)]
    asked = []
    for _ in range(TRIALS):
        result = early.invoke(invoke_body())
        assert isinstance(result, AgentResult)
        asked.append(str(result.action_required[0].action_id))
    frames = FrameLog()
    answers = race(2, lambda k: sweeps[k].sweep_expired(on_frame=frames))
    swept = [a.action_id for answer in answers for a in answer]
    assert sorted(swept) == sorted(asked)
    assert sorted(e.detail["action_id"] for e in log) == sorted(asked)
    assert sorted(f.action_id for f in frames) == sorted(asked)  # type: ignore[attr-defined]

"""The sweep (issue 13), on every store, by an injectable clock (no sleeps): it expires the overdue pending
actions nobody touched, closes the interaction that waited on them (`completed`; the agent is told on its
next run, once), keeps and sends an `action_expired` frame after the asking run's frames, and leaves
alone what is in time or answered."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from beam_store import Action, BeamStore, ToolResultPart
from riverbeam import (
    AgentResult,
    BeamError,
    DoneFrame,
    EventLog,
    ModelTurn,
    RiverBeam,
    ScriptedModel,
    StreamAck,
    ToolAgentRunner,
    ToolCall,
    tool,
)
from riverbeam.pipeline import sweep as sweep_module

from tests.support.agents import FrameLog, PushCounter, invoke_body, resume_body
from tests.support.clock import Clock, asked, clocked, iso


@pytest.fixture
def clock() -> Clock:
    return Clock()


def test_the_sweep_expires_what_is_overdue_and_closes_its_interaction(store: BeamStore, clock: Clock) -> None:
    beam, counter = clocked(store, clock)
    result = asked(beam)
    action_id, interaction_id = str(result.action_required[0].action_id), str(result.interaction_id)
    clock.advance(hours=23)
    assert beam.sweep_expired() == []  # in time: left pending
    assert beam.read_action(action_id, user_id="u1").status == "pending"
    clock.advance(hours=1)
    frames = FrameLog()
    swept = beam.sweep_expired(on_frame=frames)
    assert [a.action_id for a in swept] == [action_id] and swept[0].status == "expired"
    action = beam.read_action(action_id, user_id="u1")
    assert action.status == "expired" and action.updated_at == iso(clock())
    assert action.response is not None and action.response.by.kind == "expiry"
    assert beam.read_interaction(interaction_id, user_id="u1").status == "completed"
    assert beam.sweep_expired() == []  # nothing twice
    (frame,) = frames
    assert frame.model_dump(mode="json") == {
        "type": "action_expired",
        "session_id": str(result.session_id),
        "interaction_id": interaction_id,
        "run_id": str(result.run_id),
        "frame_seq": 0,  # a run that was not streamed kept no frames
        "action_id": action_id,
        "tool": "git_push",
        "args_sha256": result.action_required[0].args_sha256,
        "expires_at": result.action_required[0].expires_at,
        "expired_at": iso(clock()),
    }
    with pytest.raises(BeamError) as raised:
        beam.resume(resume_body(result))
    assert raised.value.code == "BEM-070" and counter.pushed == []


def _told(beam: RiverBeam, session_id: str) -> list[str]:
    return [
        p.tool_call_id
        for m in beam.read_messages(session_id, user_id="u1")
        for p in m.content
        if isinstance(p, ToolResultPart) and p.error is not None and p.error.code == "BEM-070"
    ]


def test_the_agent_is_told_of_a_swept_action_on_the_next_run_once(store: BeamStore, clock: Clock) -> None:
    beam, _ = clocked(store, clock)
    result = asked(beam)
    session_id, interaction_id = str(result.session_id), str(result.interaction_id)
    clock.advance(days=2)
    assert len(beam.sweep_expired()) == 1
    again = beam.invoke(invoke_body(session_id, text="and now?", interaction_id=interaction_id))
    assert isinstance(again, AgentResult) and not again.interrupted
    assert _told(beam, session_id) == [result.action_required[0].action_id]
    action = beam.read_action(str(result.action_required[0].action_id), user_id="u1")
    assert action.resolved_run_id == again.run_id
    beam.invoke(invoke_body(session_id, text="still there?", interaction_id=interaction_id))
    assert len(_told(beam, session_id)) == 1


def test_a_streamed_run_keeps_the_frame_after_its_done(store: BeamStore, clock: Clock) -> None:
    beam, _ = clocked(store, clock)
    frames = FrameLog()
    session_id = invoke_body()["session_id"]
    beam.invoke(invoke_body(session_id, stream=True), on_frame=frames)
    done = frames[-1]
    assert done.type == "done"
    clock.advance(days=1)
    pushed = FrameLog()
    beam.sweep_expired(on_frame=pushed)
    kept = beam.read_frames(done.run_id, user_id="u1")
    assert [f["type"] for f in kept][-2:] == ["done", "action_expired"]
    assert kept[-1]["frame_seq"] == done.frame_seq + 1 == pushed[0].frame_seq


def test_an_interaction_still_waiting_on_another_action_stays_open(store: BeamStore, clock: Clock) -> None:
    counter = PushCounter()

    @tool(confirm_required=True, expires_after=60)
    def deploy(env: str) -> str:
        """Deploy, if someone says so within a minute."""
        return env

    calls = [ToolCall(name="git_push", args={"ref": "a"}), ToolCall(name="deploy", args={"env": "prod"})]
    beam = RiverBeam(store, clock=clock)
    model = ScriptedModel([ModelTurn(tool_calls=calls)] * 2)
    runner = ToolAgentRunner(model=model, tools=[counter.tool(), deploy])
    beam.register_agent("author", runner, action_ttl_seconds=3600)
    first, other = asked(beam), asked(beam)
    clock.advance(minutes=2)
    swept = beam.sweep_expired()
    # a sweep spans every session: both deploys, not the pushes
    assert sorted(a.action_id for a in swept) == sorted(
        str(r.action_required[1].action_id) for r in (first, other)
    )
    assert beam.read_interaction(str(first.interaction_id), user_id="u1").status == "in_progress"
    clock.advance(hours=1)
    assert len(beam.sweep_expired()) == 2
    assert beam.read_interaction(str(first.interaction_id), user_id="u1").status == "completed"
    assert beam.read_interaction(str(other.interaction_id), user_id="u1").status == "completed"


def test_answered_actions_and_untimed_ones_are_left_alone(store: BeamStore, clock: Clock) -> None:
    beam, counter = clocked(store, clock)
    answered, waiting = asked(beam), asked(beam)
    beam.resume(resume_body(answered))
    clock.advance(days=3)
    swept = beam.sweep_expired(limit=1)  # a sweep looks at `limit` actions at most: the next goes on
    assert [a.action_id for a in swept] == [waiting.action_required[0].action_id]
    assert beam.read_action(str(answered.action_required[0].action_id), user_id="u1").status == "resolved"
    assert counter.pushed == ["docs/update"]


def test_a_frame_number_another_sweep_took_is_passed_over(store: BeamStore, clock: Clock) -> None:
    """Two sweeps beside each other expire two actions of one run: the one that reads the run's frames
    before the other keeps its frame, numbers its own after it (never over it)."""
    beam, _ = clocked(store, clock)
    streamed = FrameLog()
    beam.invoke(invoke_body(stream=True), on_frame=streamed)
    run_id = streamed[-1].run_id
    done = store.list_frames(run_id)
    other = {**done[-1], "type": "action_expired", "frame_seq": done[-1]["frame_seq"] + 1, "action_id": "x"}
    reads = store.list_frames

    def stale_then_taken(run: str, **kwargs: int) -> list[dict[str, object]]:
        found = reads(run, **kwargs)  # the first read misses the other sweep's frame, kept just after it
        if not store.add_frame(run_id, other, 2**40):
            return found
        return [f for f in found if f["frame_seq"] != other["frame_seq"]]

    store.list_frames = stale_then_taken  # type: ignore[method-assign]
    clock.advance(days=2)
    frames = FrameLog()
    assert len(beam.sweep_expired(on_frame=frames)) == 1
    store.list_frames = reads  # type: ignore[method-assign]
    kept = store.list_frames(run_id)
    assert [f["frame_seq"] for f in kept] == list(range(len(done) + 2))
    assert kept[-2] == other and kept[-1]["type"] == "action_expired" and kept[-1]["action_id"] != "x"
    assert [f.frame_seq for f in frames] == [other["frame_seq"] + 1]


@pytest.mark.parametrize("racing", [False, True])
def test_the_sweep_expiring_the_other_action_during_a_partial_resume(
    store: BeamStore, clock: Clock, monkeypatch: pytest.MonkeyPatch, racing: bool
) -> None:
    """A resume answers one of two actions; while its tool runs the other's time passes and the sweep
    expires it: the run asks for it again, but it is no longer pending. The run ends as if nothing
    else waited (completed, not failed BEM-500), and the next run tells the agent of the expiry.
    `racing`: the sweep's expiry lands after the run read the actions (it read them pending)."""
    ran: list[str] = []
    swept: list[str] = []
    reads = store.list_actions

    @tool(confirm_required=True)
    def git_push(ref: str) -> str:
        """Push; meanwhile (the tool takes a while) the other action's time passes and the sweep runs."""
        ran.append(ref)
        stale.append(reads(str(result.interaction_id)))
        clock.advance(minutes=2)
        swept.extend(a.action_id for a in beam.sweep_expired())
        if racing:  # the run's next read of the actions is from before the sweep
            monkeypatch.setattr(store, "list_actions", stale_once)
        return ref

    def stale_once(interaction_id: str) -> list[Action]:
        monkeypatch.setattr(store, "list_actions", reads)
        return stale.pop()

    stale: list[list[Action]] = []

    @tool(confirm_required=True, expires_after=60)
    def deploy(env: str) -> str:
        """Deploy, if someone says so within a minute."""
        return env

    calls = [ToolCall(name="git_push", args={"ref": "a"}), ToolCall(name="deploy", args={"env": "prod"})]
    model = ScriptedModel([ModelTurn(tool_calls=calls), ModelTurn(text="done")] * 2)
    beam = RiverBeam(store, clock=clock)
    beam.register_agent("author", ToolAgentRunner(model=model, tools=[git_push, deploy]))
    result = beam.invoke(invoke_body())
    assert isinstance(result, AgentResult)
    session_id, interaction_id = str(result.session_id), str(result.interaction_id)
    push, dep = result.action_required
    clock.advance(seconds=30)  # both in time
    frames = FrameLog()
    beam.resume(resume_body(result), on_frame=frames)  # answers the push only
    assert ran == ["a"] and swept == [dep.action_id]
    done = frames[-1]
    assert isinstance(done, DoneFrame) and not done.result.action_required and not done.result.interrupted
    run = beam.read_run(str(done.run_id), user_id="u1")
    assert run.status == "completed", run.error
    assert beam.read_interaction(interaction_id, user_id="u1").status == "completed"
    outcome = beam.read_action(str(push.action_id), user_id="u1").outcome
    assert outcome is not None and outcome.status == "ok"
    assert beam.read_action(str(dep.action_id), user_id="u1").status == "expired"
    beam.invoke(invoke_body(session_id, text="and now?", interaction_id=interaction_id))
    assert _told(beam, session_id) == [dep.action_id]


def _flaky(real: Callable[..., Any], failing: int) -> Callable[..., Any]:
    """`real`, whose `failing`th call fails (throttled past the client's retries, a timeout...)."""
    calls = {"n": 0}

    def call(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == failing:
            raise RuntimeError("ProvisionedThroughputExceededException")
        return real(*args, **kwargs)

    return call


@pytest.mark.parametrize("failing", ["expire_action", "list_overdue_actions"])
def test_a_sweep_that_fails_midway_still_tells_of_what_it_expired(
    store: BeamStore, clock: Clock, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    """One failed expiry write (or page read) costs that action (or the pages after) alone: the actions
    the sweep expired before it (they left the overdue index: no later sweep sees them again) are still
    published, their interactions closed and their frames kept and sent."""
    monkeypatch.setattr(sweep_module, "SWEEP_PAGE", 1)  # one action a page: the second page read fails
    beam, _ = clocked(store, clock)
    log = EventLog()
    beam.set_event_sink(log)
    first = beam.invoke(invoke_body(stream=True), on_frame=FrameLog())
    clock.advance(seconds=1)
    second = asked(beam)
    clock.advance(days=2)
    monkeypatch.setattr(store, failing, _flaky(getattr(store, failing), 2))
    frames = FrameLog()
    swept = beam.sweep_expired(on_frame=frames)
    monkeypatch.undo()
    assert isinstance(first, StreamAck)
    action_id = store.list_actions(str(first.interaction_id))[0].action_id
    assert [a.action_id for a in swept] == [action_id]
    assert [e.detail["action_id"] for e in log if e.detail_type == "Approval Expired"] == [action_id]
    assert beam.read_interaction(str(first.interaction_id), user_id="u1").status == "completed"
    assert [(f.type, getattr(f, "action_id", None)) for f in frames] == [("action_expired", action_id)]
    # the one left pending is the next sweep's
    assert [a.action_id for a in beam.sweep_expired()] == [second.action_required[0].action_id]


@pytest.mark.parametrize("ttl_days", [None, 3])
def test_the_sweeps_frame_comes_after_done_when_the_frames_ttl_has_passed(
    store: BeamStore, clock: Clock, monkeypatch: pytest.MonkeyPatch, ttl_days: int | None
) -> None:
    """Frames are kept 24 h and an action waits 24 h by default (or longer: an agent's own time): when
    the sweep comes, a minute after the action's time, the run's `done` must still be kept, so the
    action_expired frame is numbered after it (a subscriber that followed the run drops a number it saw)."""
    days = ttl_days or 1
    register = {"action_ttl_seconds": days * 86400} if ttl_days else {}
    beam, _ = clocked(store, clock, **register)
    streamed = FrameLog()
    beam.invoke(invoke_body(stream=True), on_frame=streamed)
    done = streamed[-1]
    assert done.type == "done"
    clock.advance(days=days, minutes=1)  # on the clock and on the wall
    wall = time.time
    monkeypatch.setattr(time, "time", lambda: wall() + days * 86400 + 60)
    pushed = FrameLog()
    assert len(beam.sweep_expired(on_frame=pushed)) == 1
    assert pushed[0].frame_seq == done.frame_seq + 1
    assert [f["type"] for f in beam.read_frames(done.run_id, user_id="u1")][-2:] == ["done", "action_expired"]

"""Pending actions expire (issue 13), on every store, by an injectable clock (no sleeps): `expires_at` (24 h,
per agent, per tool), a resume past it refused 410 BEM-070 and the action stored `expired` (never a
rejection), the agent told on the interaction's next run, once, and the interaction not blocked."""

from __future__ import annotations

from datetime import timedelta

import pytest
from beam_store import BeamStore, ToolResultPart
from riverbeam import (
    AgentResult,
    BeamError,
    EventLog,
    ModelTurn,
    RiverBeam,
    ScriptedModel,
    ToolAgentRunner,
    ToolCall,
    tool,
)

from tests.support.agents import FrameLog, PushCounter, invoke_body, resume_body
from tests.support.clock import T0, Clock, asked, clocked, iso
from tests.support.stores import snapshot


@pytest.fixture
def clock() -> Clock:
    return Clock()


def test_an_action_expires_after_24_hours_by_default(store: BeamStore, clock: Clock) -> None:
    beam, _ = clocked(store, clock)
    result = asked(beam)
    request = result.action_required[0]
    assert request.expires_at == iso(T0 + timedelta(hours=24))
    stored = beam.read_action(str(request.action_id), user_id="u1")
    assert stored.expires_at == request.expires_at


def test_an_agent_and_a_tool_may_give_another_time(store: BeamStore, clock: Clock) -> None:
    beam, _ = clocked(store, clock, action_ttl_seconds=60)
    assert asked(beam).action_required[0].expires_at == iso(T0 + timedelta(seconds=60))
    counter = PushCounter()
    tool = counter.tool()
    quick = type(tool)(**{**tool.__dict__, "expires_after": 5.0})
    beam, _ = clocked(store, clock, action_ttl_seconds=60)
    beam._setup.agents["author"].tools["git_push"] = quick  # type: ignore[attr-defined]
    assert asked(beam).action_required[0].expires_at == iso(T0 + timedelta(seconds=5))


def test_a_resume_in_time_runs_the_tool(store: BeamStore, clock: Clock) -> None:
    beam, counter = clocked(store, clock)
    result = asked(beam)
    clock.advance(hours=23, minutes=59)
    beam.resume(resume_body(result))
    assert counter.pushed == ["docs/update"]


def test_a_resume_past_the_time_is_410_and_the_action_expired(store: BeamStore, clock: Clock) -> None:
    beam, counter = clocked(store, clock)
    result = asked(beam)
    action_id = str(result.action_required[0].action_id)
    clock.advance(hours=24)
    for _ in range(2):  # the first stores it expired, the next finds it so
        with pytest.raises(BeamError) as raised:
            beam.resume(resume_body(result, "cancelled"))
        assert (raised.value.code, raised.value.status) == ("BEM-070", 410)
    action = beam.read_action(action_id, user_id="u1")
    assert action.status == "expired" and counter.pushed == []
    assert action.response is not None and action.response.by.kind == "expiry"  # nobody answered
    session_id = str(result.session_id)
    assert [a.action_id for a in beam.read_actions(session_id, user_id="u1", status="expired")] == [action_id]
    assert beam.read_actions(session_id, user_id="u1", status="pending") == []
    assert beam.read_actions(session_id, user_id="u1", status="cancelled") == []


def _told(beam: RiverBeam, session_id: str) -> list[ToolResultPart]:
    return [
        p
        for m in beam.read_messages(session_id, user_id="u1")
        for p in m.content
        if isinstance(p, ToolResultPart) and p.error is not None and p.error.code == "BEM-070"
    ]


@pytest.mark.parametrize("resumed_first", [True, False])
def test_the_agent_is_told_on_the_next_run_once_and_the_interaction_goes_on(
    store: BeamStore, clock: Clock, resumed_first: bool
) -> None:
    beam, counter = clocked(store, clock)
    result = asked(beam)
    session_id, interaction_id = str(result.session_id), str(result.interaction_id)
    action_id = str(result.action_required[0].action_id)
    clock.advance(days=2)
    if resumed_first:  # expired by a resume; else by the next run itself
        with pytest.raises(BeamError):
            beam.resume(resume_body(result))
    again = beam.invoke(invoke_body(session_id, text="and now?", interaction_id=interaction_id))
    assert isinstance(again, AgentResult) and not again.interrupted
    assert beam.read_interaction(interaction_id, user_id="u1").status == "completed"
    told = _told(beam, session_id)
    assert [(p.tool_call_id, p.status, p.name) for p in told] == [(action_id, "error", "git_push")]
    action = beam.read_action(action_id, user_id="u1")
    assert action.status == "expired" and action.resolved_run_id == again.run_id
    # the model saw it: the tool message comes before the new message, answering the call
    history = beam.read_messages(session_id, user_id="u1")
    roles = [(m.role, m.type) for m in history]
    assert roles[:4] == [("human", "message"), ("ai", "message"), ("tool", "message"), ("human", "message")]
    beam.invoke(invoke_body(session_id, text="still there?", interaction_id=interaction_id))
    assert len(_told(beam, session_id)) == 1 and counter.pushed == []


def test_a_resume_of_one_action_tells_the_agent_another_expired(store: BeamStore, clock: Clock) -> None:
    counter, deployed = PushCounter(), list[str]()

    @tool(confirm_required=True, expires_after=60)
    def deploy(env: str) -> str:
        """Deploy, if someone says so within a minute."""
        deployed.append(env)
        return env

    calls = [
        ToolCall(name="git_push", args={"ref": "docs/update"}),
        ToolCall(name="deploy", args={"env": "prod"}),
    ]
    model = ScriptedModel([ModelTurn(tool_calls=calls), ModelTurn(text="done")])
    beam = RiverBeam(store, clock=clock)
    beam.register_agent("author", ToolAgentRunner(model=model, tools=[counter.tool(), deploy]))
    result = asked(beam)
    push, later = result.action_required
    assert push.expires_at == iso(T0 + timedelta(hours=24))
    assert later.expires_at == iso(T0 + timedelta(seconds=60))
    clock.advance(minutes=2)
    beam.resume(resume_body(result))  # answers the push, in time
    assert counter.pushed == ["docs/update"] and deployed == []
    told = _told(beam, str(result.session_id))
    assert [p.tool_call_id for p in told] == [later.action_id]
    assert beam.read_action(str(later.action_id), user_id="u1").status == "expired"
    assert beam.read_interaction(str(result.interaction_id), user_id="u1").status == "completed"


def test_a_partial_resume_shows_the_stored_time_of_what_still_waits(store: BeamStore, clock: Clock) -> None:
    """Answering one of two actions an hour later: the resumed run's Result shows the other one's time as
    stored (asked for at T0), not an hour later; and it is not requested again (no second event)."""
    calls = [ToolCall(name="git_push", args={"ref": "a"}), ToolCall(name="git_push", args={"ref": "b"})]
    model = ScriptedModel([ModelTurn(tool_calls=calls), ModelTurn(text="both pushed")])
    log = EventLog()
    beam = RiverBeam(store, clock=clock, events=log)
    beam.register_agent("author", ToolAgentRunner(model=model, tools=[PushCounter().tool()]))
    result = asked(beam)
    first, second = result.action_required
    clock.advance(hours=1)
    body = resume_body(result)
    body["actions"] = [body["actions"][0] | {"payload": {"tool": "git_push", "args": {"ref": "a"}}}]
    frames = FrameLog()
    beam.resume(body, on_frame=frames)
    partial = frames[-1].result  # type: ignore[attr-defined]
    (waiting,) = partial.action_required
    stored = beam.read_action(str(second.action_id), user_id="u1")
    assert waiting.action_id == second.action_id and stored.status == "pending"
    assert waiting.expires_at == stored.expires_at == second.expires_at == iso(T0 + timedelta(hours=24))
    requested = [e.detail["action_id"] for e in log if e.detail_type == "Approval Requested"]
    assert requested == [first.action_id, second.action_id]


@pytest.mark.parametrize("accepted", [False, True])
def test_an_invoke_naming_another_users_interaction_changes_nothing(
    store: BeamStore, clock: Clock, accepted: bool
) -> None:
    """u2 names u1's interaction (waiting past its time, no sweep yet) in an invoke of u2's own session:
    refused BEM-022 before the lazy expiry, so u1's action stays pending and no event tells of it."""
    beam, _ = clocked(store, clock)
    victim = asked(beam)
    log = EventLog()
    beam.set_event_sink(log)
    clock.advance(days=2)
    before = snapshot(store)
    stranger = invoke_body(user="u2", interaction_id=str(victim.interaction_id))
    with pytest.raises(BeamError) as refused:
        (beam.accept_invoke if accepted else beam.invoke)(stranger)
    assert refused.value.code == "BEM-022"
    assert beam.read_action(str(victim.action_required[0].action_id), user_id="u1").status == "pending"
    assert list(log) == []
    assert snapshot(store) == before

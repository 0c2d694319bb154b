"""Time in the rules (CONTRACT 17), through RiverBeam on every store, the clock injected: office hours and
weekdays in two time zones (the policy's `now`); the hour's budget of unattended calls spent, then renewed
(`calls`); a call a person approved before closing time denied when it was to run after it (the Action
`denied`, by the policy at run time, the tool never ran, the run completed)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import pytest
from beam_store import BeamStore, ToolResultPart
from riverbeam import ModelTurn, NewMessage, Policy, RiverBeam, ToolAgentRunner, ToolCall, tool

from tests.support.agents import invoke_body, resume_body
from tests.support.clock import Clock

OFFICE_HOURS = """\
@id("office-hours") forbid (principal, action, resource == Tool::"deploy")
  when { context.now.weekday > 5 || context.now.hour < 9 || context.now.hour >= 17 };
"""
BUDGET = """\
@id("three-an-hour") forbid (principal, action == Action::"run_unattended", resource == Tool::"push")
  when { context.calls.hour >= 3 };
"""
# Monday 7 December 2026, 16:30 UTC: 17:30 in Paris (closed), 11:30 in New York (open)
MONDAY = datetime(2026, 12, 7, 16, 30, tzinfo=UTC)


class OneCall:
    """A model that calls `tool` once for each person's message, then says what it was told."""

    def __init__(self, tool_name: str) -> None:
        self.tool_name = tool_name

    def next_turn(self, conversation: Sequence[NewMessage], tools: Any, on_text: Any) -> ModelTurn:
        if conversation[-1].role == "human" and conversation[-1].type == "message":
            return ModelTurn(tool_calls=[ToolCall(name=self.tool_name, args={"target": "prod"})])
        told = [p for m in conversation[-1:] for p in m.content if isinstance(p, ToolResultPart)]
        return ModelTurn(text=f"{told[0].status}" if told else "done")


def _beam(
    store: BeamStore, clock: Clock, rules: str, *, confirm: bool, **register: Any
) -> tuple[RiverBeam, list[str]]:
    ran: list[str] = []

    @tool(name="deploy" if "deploy" in rules else "push", confirm_required=confirm)
    def call(target: str) -> str:
        ran.append(target)
        return f"done {target}"

    beam = RiverBeam(store, clock=clock)
    runner = ToolAgentRunner(OneCall(call.name), tools=[call])
    beam.register_agent("author", runner, policy=Policy(rules), **register)
    return beam, ran


@pytest.mark.parametrize(("timezone", "runs"), [("Europe/Paris", False), ("America/New_York", True)])
def test_office_hours_are_read_in_the_agents_time_zone(store: BeamStore, timezone: str, runs: bool) -> None:
    beam, ran = _beam(store, Clock(MONDAY), OFFICE_HOURS, confirm=False, timezone=timezone)
    result = beam.invoke(invoke_body())
    assert (ran == ["prod"]) is runs
    actions = store.list_session_actions(result.session_id or "")
    if runs:
        assert actions == []  # run unasked: nobody would have asked, nothing kept
        return
    [action] = actions
    assert action.status == "denied" and action.response is not None and action.response.by is not None
    assert action.response.by.model_dump()["policy_ids"] == ["office-hours"]


def test_a_saturday_is_closed_everywhere(store: BeamStore) -> None:
    saturday = datetime(2026, 12, 12, 12, 0, tzinfo=UTC)
    for timezone in ("Europe/Paris", "America/New_York"):
        beam, ran = _beam(store, Clock(saturday), OFFICE_HOURS, confirm=False, timezone=timezone)
        beam.invoke(invoke_body())
        assert ran == [], timezone


def test_an_unknown_time_zone_is_refused_when_the_agent_is_registered(store: BeamStore) -> None:
    with pytest.raises(ValueError, match="Mars/Olympus"):
        _beam(store, Clock(MONDAY), OFFICE_HOURS, confirm=False, timezone="Mars/Olympus")


def test_the_hours_budget_of_unattended_calls_is_spent_then_renewed(store: BeamStore) -> None:
    clock = Clock(MONDAY)
    beam, ran = _beam(store, clock, BUDGET, confirm=False)
    session = invoke_body()["session_id"]
    results = []
    for _ in range(4):
        results.append(beam.invoke(invoke_body(session)))
        clock.advance(minutes=5)
    assert len(ran) == 3 and not any(r.interrupted for r in results[:3])
    assert results[3].interrupted  # the fourth within the hour waits for a person
    assert [a.tool for a in results[3].action_required] == ["push"]
    clock.advance(minutes=50)  # an hour after the first: its budget is back
    assert not beam.invoke(invoke_body(session)).interrupted and len(ran) == 4


def test_an_approval_that_crosses_closing_time_is_denied_when_it_was_to_run(store: BeamStore) -> None:
    clock = Clock(datetime(2026, 12, 7, 15, 50, tzinfo=UTC))  # 16:50 in Paris: open
    beam, ran = _beam(store, clock, OFFICE_HOURS, confirm=True, timezone="Europe/Paris")
    asked = beam.invoke(invoke_body())
    assert asked.interrupted and ran == []
    clock.advance(minutes=15)  # 17:05 in Paris: closed by the time the person answers
    beam.resume(resume_body(asked))  # accepted
    assert ran == []  # the tool never ran
    action = store.get_action(asked.action_required[0].action_id or "")
    assert action is not None and action.status == "denied"
    assert action.response is not None and action.response.who == "u1"  # approved by its owner...
    by = action.response.by.model_dump() if action.response.by else {}
    assert by == {"kind": "policy", "policy_ids": ["office-hours"], "at": "run"}  # ...denied at run time
    assert action.outcome is not None and action.outcome.error is not None
    assert action.outcome.error.code == "BEM-080" and "when it was to run" in action.outcome.error.message
    runs = store.list_runs(asked.interaction_id or "")
    assert runs[-1].status == "completed"
    assert [a.status for a in store.list_session_actions(asked.session_id or "", status="denied")] == [
        "denied"
    ]

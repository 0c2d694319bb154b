"""An OpenAI Agents SDK agent inside Riverbeam (CONTRACT 15), on every store, with the SDK's offline
ScriptedModel: every tool call passes the gate, whether the SDK marks the tool (`needs_approval=True`) or
not; a pause is the SDK's own interruption, its RunState kept as the interaction's state and resumed in
another RiverBeam; an edit runs (the SDK has none: the tool's output says so to the model); a rejection's
reason reaches the model; two calls of a turn are answered one at a time with nothing lost; the session's
messages are in order and the next interaction sees them; a changed tool schema refuses the resume.
The cases written alike for each framework are in test_framework_shared.py."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, FunctionTool, function_tool
from beam_store import BeamStore, ToolResultPart
from beam_store.memory import InMemoryStore
from riverbeam import BeamError
from riverbeam.frameworks import OpenAIAgentsRunner

from tests.support.clock import Clock
from tests.support.framework_desk import PAY_BOB, PAY_CAROL, POLICY
from tests.support.openai_desk import BIG, Desk

TOLD_BOB = 'pay({"amount": 5, "to": "bob"})'


def _told(store: BeamStore, session_id: str | None) -> list[ToolResultPart]:
    assert session_id is not None
    return [p for m in store.list_messages(session_id) for p in m.content if isinstance(p, ToolResultPart)]


def test_a_call_the_sdk_gates_asks_and_its_tool_does_not_run(store: BeamStore) -> None:
    desk = Desk(store, PAY_BOB)
    paused = desk.invoke()
    assert paused.interrupted and desk.paid == []
    [asked] = paused.action_required
    assert (asked.tool, asked.args) == ("pay", {"to": "bob", "amount": 5})
    assert desk.actions(paused)["pay"].status == "pending"
    [call] = desk.frames_of("tool_call")
    assert (call["decision"], call["tool_call_id"]) == ("ask", str(asked.action_id))
    assert store.get_state(paused.interaction_id)["value"]["pending"][0]["tool"] == "pay"


def test_an_approval_in_another_riverbeam_runs_the_tool_once(store: BeamStore) -> None:
    desk = Desk(store, PAY_BOB)
    paused = desk.invoke()
    done = desk.reopened().answer(paused)
    assert desk.paid == [("bob", 5)]
    assert not done.interrupted and done.text() == f"told {TOLD_BOB}: paid 5 to bob"
    action = desk.actions(paused)["pay"]
    assert action.status == "resolved" and action.outcome.output == "paid 5 to bob"
    [result] = desk.frames_of("tool_result")
    assert (result["status"], result["tool_call_id"]) == ("ok", action.action_id)
    assert "".join(f["text"] for f in desk.frames_of("text_delta")) == done.text()
    assert desk.frames_of("done")
    with pytest.raises(BeamError):  # answered once: a second answer runs nothing
        desk.answer(paused)
    assert desk.paid == [("bob", 5)]


def test_an_edit_runs_with_the_edited_args_and_the_model_is_told(store: BeamStore) -> None:
    desk = Desk(store, PAY_BOB)
    paused = desk.invoke()
    done = desk.answer(paused, edited_args={"to": "bob", "amount": 3})
    assert desk.paid == [("bob", 3)]
    edited = '(run with the args a person edited: {"amount": 3, "to": "bob"}) paid 3 to bob'
    assert done.text() == f"told {TOLD_BOB}: {edited}"
    told = _told(store, paused.session_id)
    assert [(p.status, p.output, p.edited_args) for p in told] == [
        ("ok", "paid 3 to bob", {"to": "bob", "amount": 3})
    ]


def test_a_rejection_never_runs_and_its_reason_reaches_the_model(store: BeamStore) -> None:
    desk = Desk(store, PAY_BOB)
    paused = desk.invoke()
    done = desk.answer(paused, status="cancelled", reason="over budget")
    assert desk.paid == [] and not done.interrupted
    assert done.text().startswith(f"told {TOLD_BOB}: BEM-069: ")
    assert done.text().endswith("refused to run pay: over budget")
    assert desk.actions(paused)["pay"].status == "cancelled"


def test_the_policy_denies_a_tool_the_sdk_does_not_gate(store: BeamStore) -> None:
    desk = Desk(store, ("look_up", {"name": "mallory"}), ("look_up", {"name": "alice"}), policy=POLICY)
    done = desk.invoke()
    assert desk.looked == ["alice"] and not done.interrupted
    said = done.text().removeprefix("told ").split(" | ")
    assert said[0].startswith('look_up({"name": "mallory"}): BEM-080') and "no-mallory" in said[0]
    assert said[1] == 'look_up({"name": "alice"}): alice is a payee'
    assert {a.args["name"]: a.status for a in store.list_actions(done.interaction_id)} == {
        "mallory": "denied"
    }
    assert [f["decision"] for f in desk.frames_of("tool_call")] == ["deny", "allow"]


def test_the_policy_allows_a_tool_the_sdk_gates(store: BeamStore) -> None:
    desk = Desk(store, PAY_BOB, policy=POLICY)
    done = desk.invoke()
    assert desk.paid == [("bob", 5)] and not done.interrupted
    action = desk.actions(done)["pay"]
    assert action.status == "resolved" and action.response.by.policy_ids == ["small-payments"]
    assert action.outcome is not None and action.outcome.output == "paid 5 to bob"


def test_args_that_do_not_fit_the_schema_strictly_are_never_asked_about(store: BeamStore) -> None:
    desk = Desk(store, ("pay", {"to": "bob", "amount": "5"}), ("pay", {"to": "bob", "amount": "two"}))
    done = desk.invoke()
    assert not done.interrupted and desk.paid == [] and store.list_actions(done.interaction_id) == []
    told = _told(store, done.session_id)
    assert [(p.status, p.error.code) for p in told if p.error] == [("error", "BEM-332"), ("error", "BEM-332")]
    assert "amount" in told[0].error.message
    assert done.text().count("BEM-332") == 2  # the model is told, as each call's tool result


def test_args_that_are_no_json_object_are_refused_not_asked_about(store: BeamStore) -> None:
    desk = Desk(store, ("pay", "not json"), ("look_up", {"name": "alice"}))
    done = desk.invoke()  # the SDK stops for such a call itself: the gate refuses it, the run goes on
    assert not done.interrupted and desk.paid == [] and desk.looked == ["alice"]
    assert store.list_actions(done.interaction_id) == []
    assert "pay(not json): BEM-332: pay: invalid arguments: args: not a JSON object" in done.text()


def test_a_needs_approval_function_of_the_users_marks_the_calls_it_says(store: BeamStore) -> None:
    desk = Desk(store, ("refund", {"amount": 5}), ("refund", {"amount": 500}))
    paused = desk.invoke()
    assert desk.paid == [("refund", 5)]  # the small refund ran unasked, the large one asks
    [asked] = paused.action_required
    assert (asked.tool, asked.args) == ("refund", {"amount": 500})
    done = desk.reopened().answer(paused)
    assert desk.paid == [("refund", 5), ("refund", 500)]
    assert done.text() == 'told refund({"amount": 5}): refunded 5 | refund({"amount": 500}): refunded 500'


def test_an_agent_with_calls_the_gate_cannot_see_is_refused() -> None:
    helper = Agent(name="helper")
    with pytest.raises(ValueError, match=r"gates function tools only.*handoffs"):
        OpenAIAgentsRunner(Agent(name="desk", handoffs=[helper]))
    with pytest.raises(ValueError, match=r"helper_tool \(an agent as a tool\)"):
        OpenAIAgentsRunner(Agent(name="desk", tools=[helper.as_tool("helper_tool", "helps")]))
    with pytest.raises(TypeError, match=r"takes an agents\.Agent"):
        OpenAIAgentsRunner("desk")  # type: ignore[arg-type]


def test_args_are_checked_strictly_with_the_tools_model_or_else_its_json_schema() -> None:
    @function_tool
    def pay(to: str, amount: int, memo: str = "") -> str:
        return "paid"

    async def invoke(ctx: Any, arguments: str) -> str:
        return "counted"

    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    count = FunctionTool(name="count", description="", params_json_schema=schema, on_invoke_tool=invoke)
    runner = OpenAIAgentsRunner(Agent(name="desk", tools=[pay, count]))
    assert runner.validate_args("pay", {"to": "bob", "amount": 5}) == []  # memo: its default
    assert runner.validate_args("pay", {"to": "bob", "amount": "5", "tip": 1}) == [
        ("amount", "Input should be a valid integer"),
        ("tip", "not a parameter of the tool"),
    ]
    assert runner.validate_args("count", {"n": 2}) == []
    assert runner.validate_args("count", {"n": "2"}) == [("n", "'2' is not of type 'integer'")]


def test_two_calls_of_a_turn_answered_one_at_a_time_each_run_once(store: BeamStore) -> None:
    desk = Desk(store, PAY_BOB, PAY_CAROL)
    paused = desk.invoke()
    assert [a.args["to"] for a in paused.action_required] == ["bob", "carol"]
    waiting = desk.reopened().answer(paused, 0)
    assert waiting.interrupted and desk.paid == []  # the SDK goes on once both are answered
    assert [a.action_id for a in waiting.action_required] == [paused.action_required[1].action_id]
    done = desk.reopened().answer(waiting, 0, status="cancelled", reason="not carol")
    assert desk.paid == [("bob", 5)] and not done.interrupted
    bob, carol = done.text().removeprefix("told ").split(" | ")
    assert bob == f"{TOLD_BOB}: paid 5 to bob" and carol.endswith("refused to run pay: not carol")
    statuses = {a.args["to"]: a.status for a in store.list_actions(paused.interaction_id)}
    assert statuses == {"bob": "resolved", "carol": "cancelled"}


def test_a_call_whose_args_are_not_those_approved_never_runs() -> None:
    store = InMemoryStore()  # its Action's args changed behind Riverbeam's back, as in a tampered table
    desk = Desk(store, PAY_BOB)
    paused = desk.invoke()
    [asked] = paused.action_required
    store._actions[str(asked.action_id)].args = asked.args = {"to": "mallory", "amount": 5}
    done = desk.reopened().answer(paused)
    assert desk.paid == [] and not done.interrupted
    assert done.text().startswith(f"told {TOLD_BOB}: BEM-084: pay: ")
    [told] = _told(store, paused.session_id)
    assert (told.status, told.error.code) == ("refused", "BEM-084")


def test_each_run_counts_the_tokens_of_its_own_model_calls(store: BeamStore) -> None:
    desk = Desk(store, ("look_up", {"name": "bob"}), PAY_BOB)
    paused = desk.invoke()  # one model call (10 in, 2 out), then the pause
    desk.reopened().answer(paused)  # one more, from the kept RunState (whose count goes on)
    assert paused.interaction_id is not None
    used = [
        (r.usage.input_tokens, r.usage.output_tokens)
        for r in store.list_runs(paused.interaction_id)
        if r.usage
    ]
    assert used == [(10, 2), (10, 2)]


def test_the_sessions_messages_are_in_order(store: BeamStore) -> None:
    desk = Desk(store, ("look_up", {"name": "bob"}), PAY_BOB)
    paused = desk.invoke()
    desk.answer(paused)
    said = []
    assert paused.session_id is not None
    for m in store.list_messages(paused.session_id):
        for p in m.content:
            said.append(
                f"{m.role}:{p.type}:" + getattr(p, "text", getattr(p, "name", getattr(p, "status", "")))
            )
    assert said == [
        "human:text:Pay bob",
        "ai:tool_call:look_up",
        "ai:tool_call:pay",
        "tool:tool_result:look_up",
        "human:action_response:submitted",
        "tool:tool_result:pay",
        'ai:text:told look_up({"name": "bob"}): bob is a payee | ' + f"{TOLD_BOB}: paid 5 to bob",
    ]


def test_a_state_over_the_item_limit_is_read_back_whole(store: BeamStore) -> None:
    desk = Desk(store, ("look_up", {"name": "big"}), PAY_BOB)
    paused = desk.invoke()
    kept = store.get_state(paused.interaction_id)
    assert kept is not None and len(json.dumps(kept)) > 400 * 1024
    desk.reopened().answer(paused)
    returned = [i["output"] for i in desk.given if i.get("type") == "function_call_output"]
    assert returned == [BIG, "paid 5 to bob"] and desk.paid == [("bob", 5)]


def test_the_next_interaction_sees_the_conversation(store: BeamStore) -> None:
    desk = Desk(store, PAY_BOB)
    paused = desk.invoke()
    desk.answer(paused)
    recap = desk.invoke("recap", session_id=paused.session_id)
    assert recap.text() == (
        f"recap: asked Pay bob | called {TOLD_BOB} | pay: paid 5 to bob | said told {TOLD_BOB}: paid 5 to bob"
    )


def test_an_expired_call_is_a_rejection_that_says_so(store: BeamStore) -> None:
    clock = Clock()
    desk = Desk(store, PAY_BOB, clock=clock)
    paused = desk.invoke()
    clock.advance(days=2)
    again = desk.invoke("recap", session_id=paused.session_id, interaction_id=paused.interaction_id)
    assert desk.paid == [] and not again.interrupted
    said = again.text().split(" | ")
    assert said[-1].startswith("pay: BEM-070: nobody answered before") and said[-1].endswith("did not run")
    assert desk.actions(paused)["pay"].status == "expired"


def test_an_approval_that_crosses_closing_time_is_denied_when_it_was_to_run(store: BeamStore) -> None:
    closing = '@id("office-hours") forbid (principal, action, resource == Tool::"pay")\n'
    closing += "  when { context.now.hour >= 17 };\n"
    clock = Clock(datetime(2026, 12, 7, 16, 50, tzinfo=UTC))
    desk = Desk(store, PAY_BOB, policy=closing, clock=clock)
    paused = desk.invoke()
    clock.advance(minutes=15)  # closed by the time the person answers
    done = desk.reopened().answer(paused)
    assert desk.paid == [] and not done.interrupted
    assert done.text().startswith(f"told {TOLD_BOB}: BEM-080") and "when it was to run" in done.text()
    action = desk.actions(paused)["pay"]
    assert action.status == "denied" and action.response.by.model_dump()["at"] == "run"


def test_an_approval_approves_that_call_only_never_the_tool(store: BeamStore) -> None:
    desk = Desk(store, PAY_BOB, then=[PAY_CAROL])  # paid bob, the model then pays carol
    paused = desk.invoke()
    again = desk.reopened().answer(paused)
    assert again.interrupted and desk.paid == [("bob", 5)]  # no always_approve: carol's call asks
    assert [(a.tool, a.args["to"]) for a in again.action_required] == [("pay", "carol")]
    done = desk.reopened().answer(again)
    assert not done.interrupted and desk.paid == [("bob", 5), ("carol", 7)]


def test_a_run_inside_a_running_event_loop(store: BeamStore) -> None:
    desk = Desk(store, ("look_up", {"name": "alice"}))

    async def invoked() -> str:  # an async caller (a web handler) runs the SDK on a thread of its own
        return desk.invoke().text()

    assert asyncio.run(invoked()) == 'told look_up({"name": "alice"}): alice is a payee'


def test_the_docs_example_runs_offline_and_prints_what_it_says() -> None:
    page = Path(__file__).parents[2] / "docs" / "frameworks" / "openai_agents.md"
    [block] = re.findall(r"^```python\n(.*?)^```", page.read_text(encoding="utf-8"), re.S | re.M)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(block, str(page), "exec"), {})
    assert printed.getvalue().splitlines() == [
        "pay {'to': 'bob', 'amount': 5}",
        "run_started",
        "tool_result",
        "text_delta",
        "done",
    ]

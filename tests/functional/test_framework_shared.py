"""What a Pydantic AI, a Strands and an OpenAI Agents SDK agent inside Riverbeam (CONTRACT 15) do alike,
on every store, each with the test desk of its framework (tests/support/pydantic_agents.py,
strands_agents.py, openai_desk.py) and its test module's policy: the cases written the same way for each
(the rest are in tests/functional/test_framework_<framework>.py)."""

from __future__ import annotations

import asyncio
import importlib
from types import ModuleType

import pytest
from beam_store import BeamStore, ToolResultPart
from riverbeam import BeamError

from tests.support.framework_desk import PAY_BOB, POLICY


def _framework(request: pytest.FixtureRequest) -> ModuleType:
    """The framework's test module: its `Desk`, and its `POLICY` (where it has its own, else the shared)."""
    module = importlib.import_module(f"tests.functional.test_framework_{request.param}")
    if not hasattr(module, "POLICY"):
        module.POLICY = POLICY
    return module


@pytest.fixture(params=["pydantic_ai", "strands", "openai_agents"])
def every(request: pytest.FixtureRequest) -> ModuleType:
    return _framework(request)


@pytest.fixture(params=["pydantic_ai", "strands"])
def desk_of(request: pytest.FixtureRequest) -> ModuleType:
    """Pydantic AI's and Strands' (the OpenAI Agents SDK's tests of these differ: see its module)."""
    return _framework(request)


def test_a_changed_tool_schema_refuses_the_resume(store: BeamStore, every: ModuleType) -> None:
    desk = every.Desk(store, PAY_BOB)
    paused = desk.invoke()
    with pytest.raises(BeamError) as refused:
        desk.reopened(schema="float").answer(paused)
    assert refused.value.code == "BEM-083" and "'pay' takes other args" in refused.value.message
    assert desk.paid == []


def test_a_grant_lets_the_next_call_of_the_tool_run_unasked(store: BeamStore, every: ModuleType) -> None:
    desk = every.Desk(store, PAY_BOB)
    paused = desk.invoke()
    desk.answer(paused, grant="tool")
    again = desk.invoke("Pay bob again", session_id=paused.session_id)
    assert not again.interrupted and desk.paid == [("bob", 5), ("bob", 5)]


def test_a_call_the_framework_gates_asks_and_its_tool_does_not_run(
    store: BeamStore, desk_of: ModuleType
) -> None:
    desk = desk_of.Desk(store, PAY_BOB)
    paused = desk.invoke()
    assert paused.interrupted and desk.paid == []
    [asked] = paused.action_required
    assert (asked.tool, asked.args) == ("pay", {"to": "bob", "amount": 5})
    assert desk.actions(paused)["pay"].status == "pending"
    [call] = desk.frames_of("tool_call")
    assert (call["decision"], call["tool_call_id"]) == ("ask", str(asked.action_id))


def test_an_approval_in_another_riverbeam_runs_the_tool_once(store: BeamStore, desk_of: ModuleType) -> None:
    desk = desk_of.Desk(store, PAY_BOB)
    paused = desk.invoke()
    done = desk.reopened().answer(paused)
    assert desk.paid == [("bob", 5)]
    assert not done.interrupted and done.text() == 'told pay({"amount": 5, "to": "bob"}): paid 5 to bob'
    action = desk.actions(paused)["pay"]
    assert action.status == "resolved" and action.outcome.output == "paid 5 to bob"
    [result] = desk.frames_of("tool_result")
    assert (result["status"], result["tool_call_id"]) == ("ok", action.action_id)
    assert "".join(f["text"] for f in desk.frames_of("text_delta")) == done.text()
    run = store.get_run(done.run_id)
    assert run is not None and run.usage is not None and run.usage.output_tokens > 0
    assert desk.frames_of("done")
    with pytest.raises(BeamError):  # answered once: a second answer runs nothing
        desk.answer(paused)
    assert desk.paid == [("bob", 5)]


def test_an_edit_runs_with_the_edited_args_and_the_model_sees_them(
    store: BeamStore, desk_of: ModuleType
) -> None:
    desk = desk_of.Desk(store, PAY_BOB)
    paused = desk.invoke()
    done = desk.answer(paused, edited_args={"to": "bob", "amount": 3})
    assert desk.paid == [("bob", 3)]
    assert done.text() == 'told pay({"amount": 3, "to": "bob"}): paid 3 to bob'
    told = [
        p for m in store.list_messages(paused.session_id) for p in m.content if isinstance(p, ToolResultPart)
    ]
    assert [(p.status, p.edited_args) for p in told] == [("ok", {"to": "bob", "amount": 3})]


def test_a_rejection_never_runs_and_its_reason_reaches_the_model(
    store: BeamStore, desk_of: ModuleType
) -> None:
    desk = desk_of.Desk(store, PAY_BOB)
    paused = desk.invoke()
    done = desk.answer(paused, status="cancelled", reason="over budget")
    assert desk.paid == [] and not done.interrupted
    assert done.text().startswith('told pay({"amount": 5, "to": "bob"}): BEM-069: ')
    assert done.text().endswith("refused to run pay: over budget")
    assert desk.actions(paused)["pay"].status == "cancelled"


def test_the_policy_denies_a_tool_the_framework_does_not_gate(store: BeamStore, desk_of: ModuleType) -> None:
    desk = desk_of.Desk(
        store, ("look_up", {"name": "mallory"}), ("look_up", {"name": "alice"}), policy=desk_of.POLICY
    )
    done = desk.invoke()
    assert desk.looked == ["alice"] and not done.interrupted
    said = done.text().split(" | ")
    assert said[0].startswith('told look_up({"name": "mallory"}): BEM-080') and "no-mallory" in said[0]
    assert said[1] == 'look_up({"name": "alice"}): alice is a payee'
    assert {a.args["name"]: a.status for a in store.list_actions(done.interaction_id)} == {
        "mallory": "denied"
    }
    assert [f["decision"] for f in desk.frames_of("tool_call")] == ["deny", "allow"]


def test_the_policy_allows_a_tool_the_framework_gates(store: BeamStore, desk_of: ModuleType) -> None:
    desk = desk_of.Desk(store, PAY_BOB, policy=desk_of.POLICY)
    done = desk.invoke()
    assert desk.paid == [("bob", 5)] and not done.interrupted
    action = desk.actions(done)["pay"]
    assert action.status == "resolved" and action.response.by.policy_ids == ["small-payments"]
    assert action.outcome is not None and action.outcome.output == "paid 5 to bob"


def test_args_that_do_not_fit_the_schema_strictly_are_never_asked_about(
    store: BeamStore, desk_of: ModuleType
) -> None:
    desk = desk_of.Desk(store, ("pay", {"to": "bob", "amount": "5"}), ("pay", {"to": "bob", "amount": "two"}))
    done = desk.invoke()
    assert not done.interrupted and desk.paid == [] and store.list_actions(done.interaction_id) == []
    told = [
        p for m in store.list_messages(done.session_id) for p in m.content if isinstance(p, ToolResultPart)
    ]
    assert [(p.status, p.error.code) for p in told if p.error] == [("error", "BEM-332"), ("error", "BEM-332")]
    assert "amount" in told[0].error.message


def test_the_sessions_messages_are_in_order(store: BeamStore, desk_of: ModuleType) -> None:
    desk = desk_of.Desk(store, ("look_up", {"name": "bob"}), PAY_BOB)
    paused = desk.invoke()
    desk.answer(paused)
    said = []
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
        "ai:text:told "
        + 'look_up({"name": "bob"}): bob is a payee | pay({"amount": 5, "to": "bob"}): paid 5 to bob',
    ]


def test_a_run_inside_a_running_event_loop(store: BeamStore, desk_of: ModuleType) -> None:
    desk = desk_of.Desk(store, ("look_up", {"name": "alice"}))

    async def invoked() -> str:  # an async caller (a web handler) runs the framework on a thread of its own
        return desk.invoke().text()

    assert asyncio.run(invoked()) == 'told look_up({"name": "alice"}): alice is a payee'

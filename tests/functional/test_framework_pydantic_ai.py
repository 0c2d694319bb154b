"""A Pydantic AI agent inside Riverbeam (CONTRACT 15), on every store, with the framework's offline model:
every tool call passes the gate, whether the framework marks the tool (`requires_approval=True`) or not;
a pause is the framework's deferred calls, kept as the interaction's state and resumed in another
RiverBeam; an edit runs and is what the model sees; a rejection's reason reaches the model; two calls of a
turn are answered one at a time with nothing lost; the session's messages are in order and the next
interaction sees them; a changed tool schema refuses the resume (BEM-083)."""

from __future__ import annotations

import asyncio
import json

import pytest
from beam_store import BeamStore, ToolResultPart
from pydantic_ai import Agent
from pydantic_ai import messages as pai
from pydantic_ai.models.function import AgentInfo, FunctionModel
from riverbeam import AgentResult, BeamError, RiverBeam
from riverbeam.frameworks import PydanticAIRunner
from riverbeam.telemetry import attributes as attr

from tests.support.agents import invoke_body
from tests.support.clock import Clock
from tests.support.pydantic_agents import BIG, Desk
from tests.support.spans import recording

PAY_BOB = ("pay", {"to": "bob", "amount": 5})
PAY_CAROL = ("pay", {"to": "carol", "amount": 7})
POLICY = """\
@id("small-payments") permit (principal, action == Action::"run_unattended", resource == Tool::"pay")
  when { context.args has amount && context.args.amount < 10 };
@id("no-mallory") forbid (principal, action, resource == Tool::"look_up")
  when { context.args has name && context.args.name == "mallory" };
"""


def test_a_call_the_framework_gates_asks_and_its_tool_does_not_run(store: BeamStore) -> None:
    desk = Desk(store, PAY_BOB)
    paused = desk.invoke()
    assert paused.interrupted and desk.paid == []
    [asked] = paused.action_required
    assert (asked.tool, asked.args) == ("pay", {"to": "bob", "amount": 5})
    assert desk.actions(paused)["pay"].status == "pending"
    [call] = desk.frames_of("tool_call")
    assert (call["decision"], call["tool_call_id"]) == ("ask", str(asked.action_id))


def test_an_approval_in_another_riverbeam_runs_the_tool_once(store: BeamStore) -> None:
    desk = Desk(store, PAY_BOB)
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


def test_an_edit_runs_with_the_edited_args_and_the_model_sees_them(store: BeamStore) -> None:
    desk = Desk(store, PAY_BOB)
    paused = desk.invoke()
    done = desk.answer(paused, edited_args={"to": "bob", "amount": 3})
    assert desk.paid == [("bob", 3)]
    assert done.text() == 'told pay({"amount": 3, "to": "bob"}): paid 3 to bob'
    told = [
        p for m in store.list_messages(paused.session_id) for p in m.content if isinstance(p, ToolResultPart)
    ]
    assert [(p.status, p.edited_args) for p in told] == [("ok", {"to": "bob", "amount": 3})]


def test_a_rejection_never_runs_and_its_reason_reaches_the_model(store: BeamStore) -> None:
    desk = Desk(store, PAY_BOB)
    paused = desk.invoke()
    done = desk.answer(paused, status="cancelled", reason="over budget")
    assert desk.paid == [] and not done.interrupted
    assert done.text().startswith('told pay({"amount": 5, "to": "bob"}): BEM-069: ')
    assert done.text().endswith("refused to run pay: over budget")
    assert desk.actions(paused)["pay"].status == "cancelled"


def test_the_policy_denies_a_tool_the_framework_does_not_gate(store: BeamStore) -> None:
    desk = Desk(store, ("look_up", {"name": "mallory"}), ("look_up", {"name": "alice"}), policy=POLICY)
    done = desk.invoke()
    assert desk.looked == ["alice"] and not done.interrupted
    said = done.text().split(" | ")
    assert said[0].startswith('told look_up({"name": "mallory"}): BEM-080') and "no-mallory" in said[0]
    assert said[1] == 'look_up({"name": "alice"}): alice is a payee'
    assert {a.args["name"]: a.status for a in store.list_actions(done.interaction_id)} == {
        "mallory": "denied"
    }
    assert [f["decision"] for f in desk.frames_of("tool_call")] == ["deny", "allow"]


def test_the_policy_allows_a_tool_the_framework_gates(store: BeamStore) -> None:
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
    told = [
        p for m in store.list_messages(done.session_id) for p in m.content if isinstance(p, ToolResultPart)
    ]
    assert [(p.status, p.error.code) for p in told if p.error] == [("error", "BEM-332"), ("error", "BEM-332")]
    assert "amount" in told[0].error.message


def test_two_calls_of_a_turn_answered_one_at_a_time_each_run_once(store: BeamStore) -> None:
    desk = Desk(store, PAY_BOB, PAY_CAROL)
    paused = desk.invoke()
    assert [a.args["to"] for a in paused.action_required] == ["bob", "carol"]
    waiting = desk.reopened().answer(paused, 0)
    # bob's runs now, in the run of its answer; the framework goes on (its model) once both are answered
    assert waiting.interrupted and desk.paid == [("bob", 5)] and waiting.text() == ""
    assert [a.action_id for a in waiting.action_required] == [paused.action_required[1].action_id]
    done = desk.reopened().answer(waiting, 0, status="cancelled", reason="not carol")
    assert desk.paid == [("bob", 5)] and not done.interrupted
    bob, carol = done.text().removeprefix("told ").split(" | ")
    assert bob.endswith("paid 5 to bob") and carol.endswith("refused to run pay: not carol")
    actions = {a.args["to"]: a for a in store.list_actions(paused.interaction_id)}
    assert {to: a.status for to, a in actions.items()} == {"bob": "resolved", "carol": "cancelled"}
    assert actions["bob"].outcome is not None and actions["bob"].outcome.output == "paid 5 to bob"


def test_an_edited_call_answered_before_the_others_of_its_turn(store: BeamStore) -> None:
    desk = Desk(store, PAY_BOB, PAY_CAROL)
    paused = desk.invoke()
    desk.answer(paused, 1, edited_args={"to": "carol", "amount": 6})
    assert desk.paid == [("carol", 6)]
    done = desk.reopened().answer(paused, 0)
    assert desk.paid == [("carol", 6), ("bob", 5)]
    assert done.text() == (
        'told pay({"amount": 5, "to": "bob"}): paid 5 to bob'
        ' | pay({"amount": 6, "to": "carol"}): paid 6 to carol'
    )


def test_the_sessions_messages_are_in_order(store: BeamStore) -> None:
    desk = Desk(store, ("look_up", {"name": "bob"}), PAY_BOB)
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


def test_a_state_over_the_item_limit_is_read_back_whole(store: BeamStore) -> None:
    desk = Desk(store, ("look_up", {"name": "big"}), PAY_BOB)
    paused = desk.invoke()
    kept = store.get_state(paused.interaction_id)
    assert kept is not None and len(json.dumps(kept)) > 400 * 1024
    desk.reopened().answer(paused)
    returned = [p.content for m in desk.seen for p in m.parts if isinstance(p, pai.ToolReturnPart)]
    assert returned == [BIG, "paid 5 to bob"] and desk.paid == [("bob", 5)]


def test_a_changed_tool_schema_refuses_the_resume(store: BeamStore) -> None:
    desk = Desk(store, PAY_BOB)
    paused = desk.invoke()
    with pytest.raises(BeamError) as refused:
        desk.reopened(schema="float").answer(paused)
    assert refused.value.code == "BEM-083" and "'pay' takes other args" in refused.value.message
    assert desk.paid == []


def test_the_next_interaction_sees_the_conversation(store: BeamStore) -> None:
    desk = Desk(store, PAY_BOB)
    paused = desk.invoke()
    desk.answer(paused)
    recap = desk.invoke("recap", session_id=paused.session_id)
    assert recap.text() == (
        'recap: asked Pay bob | called pay({"amount": 5, "to": "bob"}) | pay: paid 5 to bob'
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


def test_a_tool_that_asks_as_it_runs_asks_and_runs_once_approved(store: BeamStore) -> None:
    desk = Desk(store, ("refund", {"amount": 5}), ("refund", {"amount": 500}))
    paused = desk.invoke()
    assert desk.paid == [("refund", 5)]  # the small refund ran unasked, the large one asks
    [asked] = paused.action_required
    assert (asked.tool, asked.args) == ("refund", {"amount": 500})
    done = desk.reopened().answer(paused)
    assert desk.paid == [("refund", 5), ("refund", 500)]
    assert done.text() == 'told refund({"amount": 5}): refunded 5 | refund({"amount": 500}): refunded 500'


def test_a_grant_lets_the_next_call_of_the_tool_run_unasked(store: BeamStore) -> None:
    desk = Desk(store, PAY_BOB)
    paused = desk.invoke()
    desk.answer(paused, grant="tool")
    again = desk.invoke("Pay bob again", session_id=paused.session_id)
    assert not again.interrupted and desk.paid == [("bob", 5), ("bob", 5)]


def test_a_run_inside_a_running_event_loop(store: BeamStore) -> None:
    desk = Desk(store, ("look_up", {"name": "alice"}))

    async def invoked() -> str:  # an async caller (a web handler) runs the framework on a thread of its own
        return desk.invoke().text()

    assert asyncio.run(invoked()) == 'told look_up({"name": "alice"}): alice is a payee'


def test_each_tool_that_runs_has_its_span(store: BeamStore) -> None:
    for recorded in recording():
        desk = Desk(store, ("look_up", {"name": "alice"}), PAY_BOB)
        paused = desk.invoke()
        [look_up] = [dict(s.attributes or {}) for s in recorded.named("execute_tool look_up")]
        assert look_up[attr.DECISION] == "allow" and recorded.named("execute_tool pay") == []
        desk.answer(paused)
        [action] = [a for a in store.list_actions(paused.interaction_id) if a.tool == "pay"]
        span = recorded.one("execute_tool pay")
        pay = dict(span.attributes or {})
        assert (pay[attr.DECISION], pay[attr.DECIDED_BY]) == ("ask", "u1")
        assert pay[attr.ACTION_ID] == pay[attr.TOOL_CALL_ID] == action.action_id
        assert pay[attr.ARGS_SHA256] == action.args_sha256
        _, resuming = recorded.named("invoke_agent author")  # each run's, around the framework's
        assert span.context is not None and resuming.context is not None
        assert span.context.trace_id == resuming.context.trace_id


def test_a_model_that_does_not_stream_runs_without_text_deltas(store: BeamStore) -> None:
    def answer(messages: list[pai.ModelMessage], info: AgentInfo) -> pai.ModelResponse:
        return pai.ModelResponse(parts=[pai.TextPart(content="hello")])

    beam = RiverBeam(store)
    beam.register_agent("author", PydanticAIRunner(Agent(FunctionModel(answer), name="plain")))
    frames: list[str] = []
    done = beam.invoke(invoke_body(), on_frame=lambda frame: frames.append(frame.type))
    assert isinstance(done, AgentResult) and done.text() == "hello"
    assert "text_delta" not in frames and frames[-1] == "done"

"""A Pydantic AI agent inside Riverbeam (CONTRACT 15), on every store, with the framework's offline model:
every tool call passes the gate, whether the framework marks the tool (`requires_approval=True`) or not;
a pause is the framework's deferred calls, kept as the interaction's state and resumed in another
RiverBeam; an edit runs and is what the model sees; a rejection's reason reaches the model; two calls of a
turn are answered one at a time with nothing lost; the session's messages are in order and the next
interaction sees them; a changed tool schema refuses the resume (BEM-083).
The cases written alike for each framework are in test_framework_shared.py."""

from __future__ import annotations

import json

from beam_store import BeamStore
from pydantic_ai import Agent
from pydantic_ai import messages as pai
from pydantic_ai.models.function import AgentInfo, FunctionModel
from riverbeam import AgentResult, RiverBeam
from riverbeam.frameworks import PydanticAIRunner
from riverbeam.telemetry import attributes as attr

from tests.support.agents import invoke_body
from tests.support.clock import Clock
from tests.support.framework_desk import PAY_BOB, PAY_CAROL
from tests.support.pydantic_agents import BIG, Desk
from tests.support.spans import recording


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


def test_a_state_over_the_item_limit_is_read_back_whole(store: BeamStore) -> None:
    desk = Desk(store, ("look_up", {"name": "big"}), PAY_BOB)
    paused = desk.invoke()
    kept = store.get_state(paused.interaction_id)
    assert kept is not None and len(json.dumps(kept)) > 400 * 1024
    desk.reopened().answer(paused)
    returned = [p.content for m in desk.seen for p in m.parts if isinstance(p, pai.ToolReturnPart)]
    assert returned == [BIG, "paid 5 to bob"] and desk.paid == [("bob", 5)]


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

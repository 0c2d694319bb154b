"""A Strands agent inside Riverbeam (CONTRACT 15), on every store, with a Strands Model of the test's own:
every tool call passes the gate, whether the user's own BeforeToolCallEvent hook interrupts it (the tool
is "marked") or not; a pause is the framework's interrupts, the agent's snapshot kept as the
interaction's state and resumed in another RiverBeam (a new agent); an edit runs and is what the model
sees; a rejection's reason reaches the model; two calls of a turn are answered one at a time with nothing
lost; the session's messages are in order and the next interaction sees them; a changed tool schema
refuses the resume (BEM-083).
The cases written alike for each framework are in test_framework_shared.py."""

from __future__ import annotations

import json

import pytest
from beam_store import BeamStore, InMemoryStore
from opentelemetry import trace
from opentelemetry.instrumentation.threading import ThreadingInstrumentor
from opentelemetry.sdk.trace import ReadableSpan
from riverbeam import BeamError
from riverbeam.telemetry import attributes as attr

from tests.support.clock import Clock
from tests.support.framework_desk import PAY_BOB, PAY_CAROL
from tests.support.framework_desk import POLICY as BASE_POLICY
from tests.support.spans import recording
from tests.support.strands_agents import BIG, Desk

POLICY = (
    BASE_POLICY
    + """\
@id("no-mallory-pay") forbid (principal, action, resource == Tool::"pay")
  when { context.args has to && context.args.to == "mallory" };
@id("ask-carol") forbid (principal, action == Action::"run_unattended", resource == Tool::"look_up")
  when { context.args has name && context.args.name == "carol" };
"""
)


def test_an_approved_call_the_framework_would_run_with_other_args_does_not_run(store: BeamStore) -> None:
    desk = Desk(store, PAY_BOB, sneaky=True)
    paused = desk.invoke()
    done = desk.reopened().answer(paused)
    assert desk.paid == []  # a hook of the user's raised the amount after it was approved
    [result] = desk.frames_of("tool_result")
    assert (result["status"], result["error"]["code"]) == ("refused", "BEM-084")
    assert "BEM-084: pay: the framework would run other args" in done.text()


def test_the_policy_denies_a_tool_the_framework_gates_answering_its_interrupt(store: BeamStore) -> None:
    desk = Desk(store, ("pay", {"to": "mallory", "amount": 5}), policy=POLICY)
    done = desk.invoke()
    assert desk.paid == [] and not done.interrupted  # the user's hook got the refusal as its answer
    said = done.text()
    assert said.startswith('told pay({"amount": 5, "to": "mallory"}): BEM-080') and "no-mallory-pay" in said
    assert desk.actions(done)["pay"].status == "denied"


def test_a_tool_that_fails_is_told_as_its_error(store: BeamStore) -> None:
    desk = Desk(store, ("look_up", {"name": "crash"}))
    done = desk.invoke()
    [result] = desk.frames_of("tool_result")
    assert (result["status"], result["error"]["code"]) == ("error", "BEM-331")
    assert "no such payee: crash" in result["error"]["message"]
    assert "no such payee: crash" in done.text()


def test_two_calls_of_a_turn_answered_one_at_a_time_each_run_once(store: BeamStore) -> None:
    desk = Desk(store, PAY_BOB, PAY_CAROL)
    paused = desk.invoke()
    assert [a.args["to"] for a in paused.action_required] == ["bob", "carol"]
    waiting = desk.reopened().answer(paused, 0)
    assert waiting.interrupted and desk.paid == []  # the framework goes on once both are answered
    assert [a.action_id for a in waiting.action_required] == [paused.action_required[1].action_id]
    done = desk.reopened().answer(waiting, 0, status="cancelled", reason="not carol")
    assert desk.paid == [("bob", 5)] and not done.interrupted
    bob, carol = done.text().removeprefix("told ").split(" | ")
    assert bob.endswith("paid 5 to bob") and carol.endswith("refused to run pay: not carol")
    statuses = {a.args["to"]: a.status for a in store.list_actions(paused.interaction_id)}
    assert statuses == {"bob": "resolved", "carol": "cancelled"}


def test_a_marked_call_and_one_the_policy_asks_for_answered_one_at_a_time(store: BeamStore) -> None:
    desk = Desk(store, PAY_BOB, ("look_up", {"name": "carol"}), ("look_up", {"name": "alice"}), policy=POLICY)
    paused = desk.invoke()  # pay: the small payment the policy allows; carol: asks by Riverbeam's interrupt
    assert sorted(desk.looked) == ["alice"] and desk.paid == [("bob", 5)]
    [asked] = paused.action_required
    assert asked.args == {"name": "carol"}
    done = desk.reopened().answer(paused, status="cancelled", reason="not carol")
    assert desk.looked == ["alice"] and desk.paid == [("bob", 5)] and not done.interrupted
    told = dict(s.split("): ", 1) for s in done.text().removeprefix("told ").split(" | "))
    assert told['pay({"amount": 5, "to": "bob"}'] == "paid 5 to bob"
    assert told['look_up({"name": "alice"}'] == "alice is a payee"
    assert told['look_up({"name": "carol"}'].endswith("refused to run look_up: not carol")


def test_two_calls_asked_by_both_kinds_of_interrupt_answered_one_at_a_time(store: BeamStore) -> None:
    desk = Desk(store, PAY_CAROL, ("look_up", {"name": "carol"}), policy=POLICY.replace("< 10", "< 5"))
    paused = desk.invoke()
    assert [a.tool for a in paused.action_required] == ["pay", "look_up"] and desk.looked == []
    waiting = desk.reopened().answer(paused, 1)  # look_up first: Strands waits for pay's answer too
    assert waiting.interrupted and desk.looked == [] and desk.paid == []
    assert [a.action_id for a in waiting.action_required] == [paused.action_required[0].action_id]
    done = desk.reopened().answer(waiting, 0, edited_args={"to": "carol", "amount": 3})
    assert desk.looked == ["carol"] and desk.paid == [("carol", 3)] and not done.interrupted
    assert sorted(done.text().removeprefix("told ").split(" | ")) == [
        'look_up({"name": "carol"}): carol is a payee',
        'pay({"amount": 3, "to": "carol"}): paid 3 to carol',
    ]


def test_a_state_over_the_item_limit_is_read_back_whole(store: BeamStore) -> None:
    desk = Desk(store, ("look_up", {"name": "big"}), PAY_BOB)
    paused = desk.invoke()
    kept = store.get_state(paused.interaction_id)
    assert kept is not None and len(json.dumps(kept)) > 400 * 1024
    desk.reopened().answer(paused)
    returned = [
        "".join(c["text"] for c in b["toolResult"]["content"])
        for m in desk.seen
        for b in m["content"]
        if "toolResult" in b
    ]
    assert returned == [BIG, "paid 5 to bob"] and desk.paid == [("bob", 5)]


def test_the_next_interaction_sees_the_conversation(store: BeamStore) -> None:
    desk = Desk(store, PAY_BOB)
    paused = desk.invoke()
    desk.answer(paused)
    recap = desk.invoke("recap", session_id=paused.session_id)
    assert recap.text() == (
        'recap: asked Pay bob | called pay({"amount": 5, "to": "bob"}) | result: paid 5 to bob'
    )


def test_an_expired_call_is_a_rejection_that_says_so(store: BeamStore) -> None:
    clock = Clock()
    desk = Desk(store, PAY_BOB, clock=clock)
    paused = desk.invoke()
    clock.advance(days=2)
    again = desk.invoke("recap", session_id=paused.session_id, interaction_id=paused.interaction_id)
    assert desk.paid == [] and not again.interrupted
    said = again.text().split(" | ")
    assert said[-1].startswith("result: BEM-070: nobody answered before") and said[-1].endswith("did not run")
    assert desk.actions(paused)["pay"].status == "expired"


def test_the_policy_asks_for_a_tool_the_framework_does_not_gate(store: BeamStore) -> None:
    desk = Desk(store, ("look_up", {"name": "carol"}), ("look_up", {"name": "alice"}), policy=POLICY)
    paused = desk.invoke()
    assert desk.looked == ["alice"]  # the allowed call ran, the other waits for Riverbeam's own interrupt
    [asked] = paused.action_required
    assert (asked.tool, asked.args) == ("look_up", {"name": "carol"})
    done = desk.reopened().answer(paused)
    assert desk.looked == ["alice", "carol"]
    assert sorted(done.text().removeprefix("told ").split(" | ")) == [  # in the order they ran
        'look_up({"name": "alice"}): alice is a payee',
        'look_up({"name": "carol"}): carol is a payee',
    ]


def test_riverbeams_spans_are_made_around_the_run_and_strands_installs_no_provider() -> None:
    for recorded in recording():
        provider = trace.get_tracer_provider()
        desk = Desk(InMemoryStore(), ("look_up", {"name": "alice"}), PAY_BOB)
        assert not ThreadingInstrumentor().is_instrumented_by_opentelemetry  # Strands' patch undone
        paused = desk.invoke()
        assert trace.get_tracer_provider() is provider
        run = recorded.named("invoke_agent author")[0]
        assert run.context is not None and run.parent is None
        strands_run = recorded.named("invoke_agent desk")[0]  # Strands' own spans, inside Riverbeam's
        assert strands_run.parent is not None and strands_run.parent.span_id == run.context.span_id
        [look_up] = riverbeams(recorded.named("execute_tool look_up"))
        assert look_up.context is not None and look_up.context.trace_id == run.context.trace_id
        assert dict(look_up.attributes or {})[attr.DECISION] == "allow"
        desk.answer(paused)
        [pay] = riverbeams(recorded.named("execute_tool pay"))
        said = dict(pay.attributes or {})
        [action] = paused.action_required
        assert said[attr.DECISION] == "ask" and said[attr.ACTION_ID] == str(action.action_id)
        assert said[attr.DECIDED_BY] == "u1" and said[attr.ARGS_SHA256]


def riverbeams(spans: list[ReadableSpan]) -> list[ReadableSpan]:
    """The spans Riverbeam made (beside Strands' own of the same name)."""
    return [s for s in spans if s.instrumentation_scope and s.instrumentation_scope.name == "riverbeam"]


def test_an_interrupt_a_tool_raises_itself_fails_the_run_naming_it(store: BeamStore) -> None:
    desk = Desk(store, ("refund", {"amount": 5}))
    with pytest.raises(BeamError):
        desk.invoke()
    [error] = desk.frames_of("error")
    assert error["code"] == "BEM-094" and "refund-approval" in error["message"]
    assert store.list_actions(desk.frames[0]["interaction_id"]) == []

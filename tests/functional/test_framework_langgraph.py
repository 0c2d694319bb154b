"""A LangGraph agent (`create_agent` with HumanInTheLoopMiddleware, no checkpointer) inside Riverbeam,
on every store (CONTRACT 15): each call it makes passes the gate, a pause is kept as the interaction's
state and resumed in another RiverBeam, each tool runs once, the model is told of edits, rejections and
denials, the session's messages and frames are Riverbeam's."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from beam_store import BeamStore, ToolResultPart
from riverbeam.telemetry import attributes as attr

from tests.support.clock import Clock
from tests.support.langgraph_agent import LangGraphAgent, calls
from tests.support.spans import recording

PUSH = calls(("push", {"ref": "docs/update"}))
POLICY = """\
@id("docs-unattended") permit (principal, action == Action::"run_unattended", resource == Tool::"push")
  when { context.args has ref && context.args.ref like "docs/*" };
@id("no-secrets") forbid (principal, action, resource == Tool::"read")
  when { context.args has path && context.args.path like "*secret*" };
@id("ask-private") forbid (principal, action == Action::"run_unattended", resource == Tool::"read")
  when { context.args has path && context.args.path like "private/*" };
"""
READ_PRIVATE = calls(("read", {"path": "private/a"}))


def test_a_marked_call_asks_and_runs_once_approved_in_another_beam(store: BeamStore) -> None:
    first = LangGraphAgent(store, PUSH)
    result = first.invoke()
    assert result.interrupted and [(a.tool, a.args) for a in result.action_required] == [
        ("push", {"ref": "docs/update"})
    ]
    assert first.pushed == []
    second = LangGraphAgent(store, PUSH)
    second.answer(result)
    assert (first.pushed, second.pushed) == ([], ["docs/update"])
    assert second.last_text(result) == "told: pushed docs/update"
    [action] = store.list_actions(str(result.interaction_id))
    assert action.outcome is not None and action.outcome.output == "pushed docs/update"


def test_an_edited_call_runs_with_the_edited_args_and_the_model_sees_them(store: BeamStore) -> None:
    result = LangGraphAgent(store, PUSH).invoke()
    second = LangGraphAgent(store, PUSH)
    asked = result.action_required[0]
    second.answer(result, edited_args={"ref": "docs/other"}, args_sha256=asked.args_sha256)
    assert second.pushed == ["docs/other"]
    assert '{"ref": "docs/other"}' in second.last_text(result)  # the middleware's own edit notice
    parts = [p for m in store.list_messages(str(result.session_id)) for p in m.content]
    [ran] = [p for p in parts if isinstance(p, ToolResultPart)]
    assert ran.status == "ok" and ran.edited_args == {"ref": "docs/other"}


def test_a_rejections_reason_reaches_the_model(store: BeamStore) -> None:
    result = LangGraphAgent(store, PUSH).invoke()
    second = LangGraphAgent(store, PUSH)
    second.answer(result, status="cancelled", reason="not before the release")
    assert second.pushed == []
    assert "rejected the tool call for `push` with reason: not before the release" in second.last_text(result)


def test_the_policy_denies_a_call_the_framework_does_not_gate(store: BeamStore) -> None:
    agent = LangGraphAgent(store, calls(("read", {"path": "the-secret"})), policy=POLICY)
    result = agent.invoke()
    assert not result.interrupted and agent.reads == []
    assert "no-secrets" in result.text() and "read" in result.text()
    [refused] = agent.frames_of("tool_result")
    assert refused["status"] == "refused"


def test_the_policy_allows_a_call_the_framework_gates(store: BeamStore) -> None:
    agent = LangGraphAgent(store, PUSH, policy=POLICY)
    result = agent.invoke()
    assert not result.interrupted and agent.pushed == ["docs/update"]
    assert result.text() == "told: pushed docs/update"
    [call] = agent.frames_of("tool_call")
    assert call["decision"] == "allow" and call["decided_by"]["policy_ids"] == ["docs-unattended"]


def test_a_call_the_framework_does_not_gate_asked_by_the_policy_runs_edited(store: BeamStore) -> None:
    result = LangGraphAgent(store, READ_PRIVATE, policy=POLICY).invoke()
    assert result.interrupted and [a.tool for a in result.action_required] == ["read"]
    second = LangGraphAgent(store, READ_PRIVATE, policy=POLICY)
    second.answer(result, edited_args={"path": "private/b"})
    assert second.reads == ["private/b"]
    assert 'it ran with the arguments {"path":"private/b"}' in second.last_text(result)


def test_a_call_the_framework_does_not_gate_rejected_is_told_with_the_reason(store: BeamStore) -> None:
    result = LangGraphAgent(store, READ_PRIVATE, policy=POLICY).invoke()
    second = LangGraphAgent(store, READ_PRIVATE, policy=POLICY)
    second.answer(result, status="cancelled", reason="too private")
    assert second.reads == []
    assert second.last_text(result) == "told: User rejected the tool call for `read` with reason: too private"


def test_args_that_do_not_fit_are_never_asked_about(store: BeamStore) -> None:
    agent = LangGraphAgent(store, calls(("read", {"path": "a", "size": "two"})))
    result = agent.invoke()
    assert not result.interrupted and agent.reads == []
    assert "BEM-332" in result.text() and "size" in result.text()
    assert store.list_actions(str(result.interaction_id)) == []


def test_two_calls_of_a_turn_answered_one_at_a_time_each_run_once(store: BeamStore) -> None:
    turn = calls(("push", {"ref": "docs/a"}), ("read", {"path": "a"}), ("push", {"ref": "docs/b"}))
    first = LangGraphAgent(store, turn)
    result = first.invoke()
    assert [a.args["ref"] for a in result.action_required] == ["docs/a", "docs/b"]
    assert (first.pushed, first.reads) == ([], ["a"])  # the allowed call runs, the others are held
    second = LangGraphAgent(store, turn)
    second.answer(result, 0)  # runs in the run of its answer; the model goes on once both are
    assert (second.pushed, second.reads) == (["docs/a"], [])
    third = LangGraphAgent(store, turn)
    third.answer(result, 1)
    assert (third.pushed, third.reads) == (["docs/b"], [])
    assert third.last_text(result) == "told: pushed docs/a | xxxx | pushed docs/b"  # the calls' order
    outcomes = {a.args["ref"]: a.outcome for a in store.list_actions(str(result.interaction_id))}
    assert {ref: o.output if o else None for ref, o in outcomes.items()} == {
        "docs/a": "pushed docs/a",
        "docs/b": "pushed docs/b",
    }
    # the messages in order: the person's, the calls, both answers, the three results, the answer
    assert third.roles(result) == ["human", "ai", "tool", "human", "tool", "human", "tool", "ai"]


def test_a_state_over_the_item_limit_reads_back_whole(store: BeamStore) -> None:
    turns = (calls(("read", {"path": "big", "size": 500_000})), PUSH)
    result = LangGraphAgent(store, *turns).invoke()
    assert result.interrupted
    kept = store.get_state(str(result.interaction_id))
    assert kept is not None and len(str(kept)) > 400_000
    second = LangGraphAgent(store, *turns)
    second.answer(result)
    assert second.pushed == ["docs/update"] and second.reads == []
    assert second.last_text(result) == "told: pushed docs/update"


def test_a_changed_tool_schema_fails_the_resume_and_runs_nothing(store: BeamStore) -> None:
    result = LangGraphAgent(store, PUSH).invoke()
    changed = LangGraphAgent(store, PUSH, push_takes_force=True)
    changed.answer(result)
    assert changed.pushed == []
    [error] = changed.frames_of("error")
    assert error["code"] == "BEM-083" and "'push'" in error["message"]


def test_the_next_interaction_sees_the_conversation(store: BeamStore) -> None:
    agent = LangGraphAgent(store, calls(("read", {"path": "notes"})))
    first = agent.invoke("Read my notes")
    agent.invoke("And again?", session_id=str(first.session_id))
    seen = [str(m.content) for m in agent.model.seen[-1]]
    assert seen[0] == "Read my notes" and "xxxx" in seen and "told: xxxx" in seen
    assert seen[-1] == "And again?"


def test_frames_stream_the_calls_their_results_and_the_text(store: BeamStore) -> None:
    agent = LangGraphAgent(store, calls(("read", {"path": "notes"})))
    result = agent.invoke()
    types = [f["type"] for f in agent.frames]
    assert {"tool_call", "tool_result", "text_delta", "done"} <= set(types)
    assert types.index("tool_call") < types.index("tool_result") < types.index("text_delta")
    assert "".join(f["text"] for f in agent.frames_of("text_delta")) == result.text() == "told: xxxx"
    [call], [ran] = agent.frames_of("tool_call"), agent.frames_of("tool_result")
    assert call["tool_call_id"] == ran["tool_call_id"] and ran["output"] == "xxxx"


def test_the_docs_example_runs_offline(capsys: pytest.CaptureFixture[str]) -> None:
    page = (Path(__file__).parents[2] / "docs" / "frameworks" / "langgraph.md").read_text(encoding="utf-8")
    [example] = re.findall(r"```python\n(.*?)```", page, flags=re.DOTALL)
    exec(compile(example, "docs/frameworks/langgraph.md", "exec"), {})
    assert "Deployed." in capsys.readouterr().out


def test_the_middlewares_per_call_interrupts_are_answered_and_each_tool_runs_once(store: BeamStore) -> None:
    turn = calls(("read", {"path": "a"}), ("push", {"ref": "docs/a"}))
    per_call = {"interrupt_on": {"push": True}, "interrupt_mode": "per_call"}
    first = LangGraphAgent(store, turn, hitl=per_call)
    result = first.invoke()
    assert [a.tool for a in result.action_required] == ["push"] and first.reads == ["a"]
    second = LangGraphAgent(store, turn, hitl=per_call)
    second.answer(result, edited_args={"ref": "docs/b"})
    assert (second.pushed, second.reads) == (["docs/b"], [])
    assert second.last_text(result).startswith("told: xxxx | ")
    assert result.usage is not None and result.usage.output_tokens == 2


def test_an_expired_call_is_a_rejection_that_says_so_and_the_model_reads_what_came_next(
    store: BeamStore,
) -> None:
    clock = Clock()
    first = LangGraphAgent(store, PUSH, clock=clock)
    result = first.invoke()
    clock.advance(days=2)
    later = LangGraphAgent(store, PUSH, clock=clock)
    again = later.invoke("and now?", session_id=str(result.session_id), interaction_id=result.interaction_id)
    assert not again.interrupted and later.pushed == []
    expired = [str(m.content) for m in later.model.seen[-2]][-1]
    assert "rejected the tool call for `push` with reason: BEM-070" in expired
    assert [str(m.content) for m in later.model.seen[-1]][-1] == "and now?"
    assert store.list_actions(str(result.interaction_id))[0].status == "expired"


def test_each_tool_that_runs_has_its_span_in_the_runs_trace(store: BeamStore) -> None:
    turn = calls(("read", {"path": "a"}), ("push", {"ref": "docs/a"}))
    for recorded in recording():
        result = LangGraphAgent(store, turn).invoke()
        LangGraphAgent(store, turn).answer(result)
        runs = [s.context.trace_id for s in recorded.named("invoke_agent author") if s.context]
        assert len(runs) == 2  # the asking run, then the resumed one: each tool's span in its run's trace
        traced = {
            s.name: (s.context.trace_id, dict(s.attributes or {})) for s in recorded.spans() if s.context
        }
        assert traced["execute_tool read"][0] == runs[0] and traced["execute_tool push"][0] == runs[1]
        traced = {name: attrs for name, (_, attrs) in traced.items()}
        asked = result.action_required[0]
        assert traced["execute_tool push"][attr.DECISION] == "ask"
        assert traced["execute_tool push"][attr.ACTION_ID] == asked.action_id
        assert traced["execute_tool read"][attr.DECISION] == "allow"


def test_a_denied_call_beside_an_asked_one_is_told_once(store: BeamStore) -> None:
    turn = calls(("read", {"path": "the-secret"}), ("push", {"ref": "main"}))
    result = LangGraphAgent(store, turn, policy=POLICY).invoke()
    assert [a.tool for a in result.action_required] == ["push"]
    second = LangGraphAgent(store, turn, policy=POLICY)
    second.answer(result)
    assert (second.pushed, second.reads) == (["main"], [])
    results = [
        (p.name, p.status)
        for m in store.list_messages(str(result.session_id))
        for p in m.content
        if isinstance(p, ToolResultPart)
    ]
    assert results == [("read", "refused"), ("push", "ok")]
    assert "no-secrets" in second.last_text(result) and "pushed main" in second.last_text(result)


def test_riverbeam_imports_nothing_of_langchain_until_a_runner_is_made() -> None:
    probe = (
        "import sys, riverbeam, riverbeam.frameworks\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'langchain', 'langchain_core', 'langgraph'}))"
    )
    found = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert found.stdout.strip() == "[]"


def test_what_a_person_says_with_each_answer_reaches_the_model_once_the_turn_is_over(
    store: BeamStore,
) -> None:
    turn = calls(("push", {"ref": "docs/a"}), ("push", {"ref": "docs/b"}))
    result = LangGraphAgent(store, turn).invoke()
    LangGraphAgent(store, turn).answer(result, 0, text="a first")
    last = LangGraphAgent(store, turn)
    last.answer(result, 1, text="then b")
    assert last.pushed == ["docs/b"]
    assert str(last.model.seen[-1][-1].content) == "a first\n\nthen b"

"""The approval loop and the guarantees of CONTRACT section 3, on every store."""

from __future__ import annotations

import logging
import uuid
from typing import Any

import pytest
from beam_store import BeamStore, ToolResultPart
from riverbeam import (
    AgentResult,
    ModelTurn,
    RiverBeam,
    ScriptedModel,
    StreamAck,
    ToolAgentRunner,
    ToolCall,
    agent_id_for,
    tool,
)

from tests.support.agents import FrameLog, PushCounter, author_beam, invoke_body, resume_body


def test_interrupt_then_approve_runs_the_stored_tool_once(store: BeamStore) -> None:
    beam, counter = author_beam(store)
    body = invoke_body(
        user="user@example.com", auth_context={"user_id": "user@example.com", "profile_id": "profile #7"}
    )
    result = beam.invoke(body)
    assert isinstance(result, AgentResult)
    assert result.interrupted and result.session_id == body["session_id"]
    [request] = result.action_required
    assert (request.kind, request.tool, request.args) == ("confirmation", "git_push", {"ref": "docs/update"})
    uuid.UUID(request.action_id or "")

    action = store.get_action(request.action_id or "")
    assert action is not None and action.status == "pending" and action.run_id == result.run_id
    run = store.get_run(result.run_id or "")
    assert run is not None and run.status == "interrupted" and run.agent_id == agent_id_for("author")
    interaction = store.get_interaction(result.interaction_id or "")
    assert interaction is not None and interaction.status == "in_progress"
    session = store.get_session(body["session_id"])
    assert session is not None and (session.user_id, session.profile_id) == ("user@example.com", "profile #7")
    assert counter.pushed == []

    frames = FrameLog()
    ack = beam.resume(resume_body(result, user="user@example.com"), on_frame=frames)
    assert isinstance(ack, StreamAck) and ack.stream == "websocket"
    assert counter.pushed == ["docs/update"]
    action = store.get_action(request.action_id or "")
    assert action is not None and action.status == "resolved" and action.resolved_run_id == ack.run_id
    assert action.response is not None and action.response.who == "user@example.com"
    assert action.outcome is not None and action.outcome.status == "ok"
    assert action.outcome.output == {"ref": "docs/update"}
    resumed = store.get_run(ack.run_id)
    assert resumed is not None and resumed.status == "completed"
    interaction = store.get_interaction(ack.interaction_id)
    assert interaction is not None and interaction.status == "completed"

    assert frames.types()[0] == "run_started" and frames.types()[-1] == "done"
    assert [f.frame_seq for f in frames] == list(range(len(frames)))
    done = frames[-1]
    assert done.result.content[0].text == "Done: ok."  # type: ignore[attr-defined]

    messages = store.list_messages(body["session_id"])
    assert [m.seq for m in messages] == list(range(1, len(messages) + 1))
    assert [(m.role, m.type) for m in messages] == [
        ("human", "message"),
        ("ai", "message"),
        ("human", "action_result"),
        ("tool", "message"),
        ("ai", "message"),
    ]
    tool_part = messages[3].content[0]
    assert isinstance(tool_part, ToolResultPart) and tool_part.tool_call_id == request.action_id
    assert tool_part.output == {"ref": "docs/update"}


def test_the_stored_args_run_when_the_response_names_no_payload(store: BeamStore) -> None:
    beam, counter = author_beam(store)
    result = beam.invoke(invoke_body())
    body = resume_body(result)
    del body["actions"][0]["payload"]
    beam.resume(body)
    assert counter.pushed == ["docs/update"]


def test_a_cancelled_action_never_runs_and_the_model_answers_the_refusal(store: BeamStore) -> None:
    beam, counter = author_beam(store)
    result = beam.invoke(invoke_body())
    assert isinstance(result, AgentResult)
    frames = FrameLog()
    beam.resume(resume_body(result, status="cancelled", reason="not today"), on_frame=frames)
    assert counter.pushed == []
    action = store.get_action(result.action_required[0].action_id or "")
    assert action is not None and action.status == "cancelled" and action.outcome is None
    assert action.response is not None and action.response.reason == "not today"
    messages = store.list_messages(result.session_id or "")
    refusal = [p for m in messages if m.role == "tool" for p in m.content]
    assert len(refusal) == 1 and isinstance(refusal[0], ToolResultPart) and refusal[0].status == "refused"
    assert refusal[0].error is not None and "not today" in refusal[0].error.message
    assert frames[-1].result.content[0].text == "OK, I will not push."  # type: ignore[attr-defined]


def test_each_resolution_logs_agent_resumed(store: BeamStore, caplog: pytest.LogCaptureFixture) -> None:
    beam, _ = author_beam(store)
    result = beam.invoke(invoke_body())
    assert isinstance(result, AgentResult)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="riverbeam"):
        beam.resume(resume_body(result))
    resumed = [r for r in caplog.records if r.getMessage() == "agent_resumed"]
    assert len(resumed) == 1
    assert getattr(resumed[0], "action_id", None) == result.action_required[0].action_id
    assert getattr(resumed[0], "response", None) == "submitted"


def test_streamed_invoke_acks_and_frames_end_in_done(store: BeamStore) -> None:
    beam, _ = author_beam(store)
    frames = FrameLog()
    ack = beam.invoke(invoke_body(stream=True), on_frame=frames)
    assert isinstance(ack, StreamAck)
    assert {(f.session_id, f.interaction_id, f.run_id) for f in frames} == {
        (ack.session_id, ack.interaction_id, ack.run_id)
    }
    assert [f.frame_seq for f in frames] == list(range(len(frames)))
    # the three words streamed at once arrive as one coalesced delta
    assert frames.types() == ["run_started", "text_delta", "tool_call", "done"]
    assert frames[1].text == "I will push."  # type: ignore[attr-defined]
    done = frames[-1]
    assert done.result.interrupted and done.result.run_id == ack.run_id  # type: ignore[attr-defined]


def test_several_tool_calls_in_one_turn(store: BeamStore) -> None:
    counter = PushCounter()
    looked_up: list[str] = []

    @tool
    def lookup(topic: str) -> str:
        """Look something up."""
        looked_up.append(topic)
        return f"notes on {topic}"

    model = ScriptedModel(
        [
            ModelTurn(
                tool_calls=[
                    ToolCall(name="lookup", args={"topic": "docs"}),
                    ToolCall(name="git_push", args={"ref": "a"}),
                    ToolCall(name="git_push", args={"ref": "b"}),
                ]
            ),
            ModelTurn(text="both pushed"),
        ]
    )
    beam = RiverBeam(store)
    beam.register_agent("author", ToolAgentRunner(model=model, tools=[lookup, counter.tool()]))
    result = beam.invoke(invoke_body())
    assert isinstance(result, AgentResult)
    assert looked_up == ["docs"]  # no approval needed: ran at once
    assert [r.args["ref"] for r in result.action_required] == ["a", "b"]

    first, second = result.action_required
    body = resume_body(result)
    body["actions"] = [{"action_id": first.action_id, "status": "submitted"}]
    frames = FrameLog()
    beam.resume(body, on_frame=frames)
    assert counter.pushed == ["a"]
    partial = frames[-1].result  # type: ignore[attr-defined]
    assert partial.interrupted and [r.action_id for r in partial.action_required] == [second.action_id]
    assert store.get_action(second.action_id or "").status == "pending"  # type: ignore[union-attr]

    body["actions"] = [{"action_id": second.action_id, "status": "submitted"}]
    frames = FrameLog()
    beam.resume(body, on_frame=frames)
    assert counter.pushed == ["a", "b"]
    assert frames[-1].result.content[0].text == "both pushed"  # type: ignore[attr-defined]
    assert (
        len(model.conversations) == 2
    )  # the model saw the conversation twice: before and after both results
    results = [p for m in model.conversations[1] for p in m.content if isinstance(p, ToolResultPart)]
    assert [r.name for r in results] == ["lookup", "git_push", "git_push"]


def test_a_tool_error_is_recorded_and_the_action_cannot_be_resumed_again(store: BeamStore) -> None:
    @tool(confirm_required=True)
    def git_push(ref: str) -> None:
        """Always fails."""
        raise OSError("disk on fire")

    model = ScriptedModel(
        [ModelTurn(tool_calls=[ToolCall(name="git_push", args={"ref": "x"})]), ModelTurn(text="sorry")]
    )
    beam = RiverBeam(store)
    beam.register_agent("author", ToolAgentRunner(model=model, tools=[git_push]))
    result = beam.invoke(invoke_body())
    assert isinstance(result, AgentResult)
    frames = FrameLog()
    beam.resume(resume_body(result), on_frame=frames)
    action = store.get_action(result.action_required[0].action_id or "")
    assert action is not None and action.status == "resolved"
    assert action.outcome is not None and action.outcome.status == "error"
    assert action.outcome.error is not None and action.outcome.error.code == "BEM-331"
    assert "error" in frames.types() and "tool_result" in frames.types()


def test_sequence_numbers_stay_dense_across_interactions(store: BeamStore) -> None:
    beam, _ = author_beam(store)
    sid = str(uuid.uuid4())
    for _ in range(3):
        result = beam.invoke(invoke_body(sid))
        beam.resume(resume_body(result))
    seqs = [m.seq for m in store.list_messages(sid)]
    assert seqs == list(range(1, 16))
    session = store.get_session(sid)
    assert session is not None and session.last_seq == 15 and session.last_active_at is not None


def test_a_custom_runner_gets_the_stored_tool_and_args(store: BeamStore) -> None:
    seen: list[Any] = []

    class Asker:
        def run(self, input: Any, emit: Any) -> AgentResult:
            seen.append(input.actions)
            if input.actions:
                return AgentResult(content=[{"type": "text", "text": "thanks"}])  # type: ignore[list-item]
            return AgentResult(
                interrupted=True, action_required=[{"tool": "deploy", "args": {"env": "prod"}}]
            )  # type: ignore[list-item]

    beam = RiverBeam(store)
    beam.register_agent("author", Asker())
    result = beam.invoke(invoke_body())
    assert isinstance(result, AgentResult)
    uuid.UUID(result.action_required[0].action_id or "")  # the pipeline assigned it
    beam.resume(resume_body(result))
    [resolved] = seen[1]
    assert (resolved.status, resolved.tool, resolved.args) == ("submitted", "deploy", {"env": "prod"})
    messages = store.list_messages(result.session_id or "")
    assert [(m.role, m.type) for m in messages][-1] == ("ai", "message")
    assert messages[-1].content[0].text == "thanks"  # type: ignore[union-attr]


def test_agent_id_is_a_stable_uuid5() -> None:
    assert agent_id_for("author") == str(uuid.uuid5(uuid.NAMESPACE_URL, "riverbeam:agent:author"))
    assert agent_id_for("author") != agent_id_for("reviewer")


def test_a_tool_that_ran_keeps_its_outcome_when_the_agent_fails_afterwards(store: BeamStore) -> None:
    counter = PushCounter()
    # the script ends after the tool call: the model has no turn left once the push has run
    model = ScriptedModel([ModelTurn(tool_calls=[ToolCall(name="git_push", args={"ref": "docs/update"})])])
    beam = RiverBeam(store)
    beam.register_agent("author", ToolAgentRunner(model=model, tools=[counter.tool()]))
    result = beam.invoke(invoke_body())
    assert isinstance(result, AgentResult)
    ack = beam.resume(resume_body(result))
    assert counter.pushed == ["docs/update"]
    run = store.get_run(ack.run_id)
    assert run is not None and run.status == "failed"
    action = store.get_action(result.action_required[0].action_id or "")
    assert (
        action is not None and action.outcome is not None and action.outcome.output == {"ref": "docs/update"}
    )
    tool_messages = [m for m in store.list_messages(ack.session_id) if m.role == "tool"]
    assert len(tool_messages) == 1


def test_a_streamed_runs_frames_can_be_read_back_after_the_fact(store: BeamStore) -> None:
    beam, _ = author_beam(store)
    frames = FrameLog()
    ack = beam.invoke(invoke_body(stream=True), on_frame=frames)
    assert isinstance(ack, StreamAck)
    sent = [f.model_dump(mode="json") for f in frames]
    assert store.list_frames(ack.run_id) == sent
    assert store.list_frames(ack.run_id, after_seq=1) == sent[2:]  # a late subscriber asks for the rest

    result = beam.invoke(invoke_body())  # not streamed: nobody subscribes, nothing kept
    assert isinstance(result, AgentResult) and store.list_frames(result.run_id or "") == []
    resumed = beam.resume(resume_body(result))
    kept = store.list_frames(resumed.run_id)
    assert kept[0]["type"] == "run_started" and kept[-1]["type"] == "done"


def test_text_deltas_are_coalesced_within_the_window(store: BeamStore) -> None:
    words = " ".join(f"w{n}" for n in range(200))
    # a window no machine's run of 200 deltas outlasts, and none
    for coalesce, most in ((3600.0, 1), (0.0, 200)):
        beam = RiverBeam(store, coalesce_seconds=coalesce)
        beam.register_agent("author", ToolAgentRunner(model=ScriptedModel([ModelTurn(text=words)])))
        frames = FrameLog()
        beam.invoke(invoke_body(stream=True), on_frame=frames)
        deltas = [f for f in frames if f.type == "text_delta"]  # type: ignore[attr-defined]
        assert len(deltas) == most
        assert "".join(d.text for d in deltas) == words  # type: ignore[attr-defined]
        assert [f.frame_seq for f in frames] == list(range(len(frames)))

"""The spans of Riverbeam's approval loop through RiverBeam, recorded by OpenTelemetry's SDK (in-memory
exporter): an invoke that interrupts is one trace (its run, each model call, each tool that ran unasked,
each action asked for as an event), the asking run's context is stored on the action in every store, and
the resume is another trace whose run links to the asking run; every span has ended when a call returns,
also when a model or a tool fails; args go on spans only when RIVERBEAM_CAPTURE_ARGS is true."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from beam_store import BeamStore, InMemoryStore
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode
from riverbeam import ModelTurn, RiverBeam, ScriptedModel, ToolAgentRunner, ToolCall, tool
from riverbeam.errors import ToolError
from riverbeam.pipeline.approval_events import EventLog
from riverbeam.telemetry import attributes as attr

from tests.support.agents import invoke_body, resume_body
from tests.support.spans import Recorded, recording


@pytest.fixture
def recorded() -> Iterator[Recorded]:
    yield from recording()


@tool(confirm_required=True)
def git_push(ref: str) -> dict[str, str]:
    """Push a branch."""
    if ref == "rejected":
        raise ToolError("BEM-330", "the remote rejected the push")
    return {"pushed": ref}


@tool()
def git_status() -> str:
    """The work tree's status."""
    return "clean"


def beam(store: BeamStore, *turns: ModelTurn | Any) -> RiverBeam:
    found = RiverBeam(store)
    runner = ToolAgentRunner(model=ScriptedModel(list(turns)), tools=[git_push, git_status])
    found.register_agent("author", runner)
    return found


LOOP = (
    ModelTurn(text="Looking.", tool_calls=[ToolCall(name="git_status")]),
    ModelTurn(text="I will push.", tool_calls=[ToolCall(name="git_push", args={"ref": "docs/x"})]),
    ModelTurn(text="Pushed."),
)


def attributes(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def in_trace(recorded: Recorded, trace_id: int) -> list[str]:
    return sorted(
        s.name for s in recorded.spans() if s.context is not None and s.context.trace_id == trace_id
    )


def test_an_interrupting_invoke_and_its_resume_are_two_linked_traces(
    recorded: Recorded, store: BeamStore
) -> None:
    loop, log = beam(store, *LOOP), EventLog()
    loop.set_event_sink(log)
    asked = loop.invoke(invoke_body())
    assert recorded.still_open() == []
    asking = recorded.one("invoke_agent author")
    assert asking.context is not None
    assert attributes(asking) | {attr.AGENT_ID: "-"} == {
        attr.OPERATION: "invoke_agent",
        attr.AGENT_NAME: "author",
        attr.AGENT_ID: "-",
        attr.CONVERSATION_ID: asked.session_id,
        attr.INTERACTION_ID: asked.interaction_id,
        attr.RUN_ID: asked.run_id,
        attr.RUN_KIND: "invoke",
        attr.RUN_STATUS: "interrupted",
        attr.INTERRUPTED: True,
    }
    assert in_trace(recorded, asking.context.trace_id) == [
        "chat ScriptedModel",
        "chat ScriptedModel",
        "execute_tool git_status",
        "invoke_agent author",
    ]
    status = recorded.one("execute_tool git_status")
    assert attributes(status)[attr.DECISION] == "allow" and attr.ACTION_ID not in attributes(status)
    chat = recorded.named("chat ScriptedModel")[0]
    assert attributes(chat)[attr.PROVIDER] == "riverbeam.offline"
    (action,) = asked.action_required
    (event,) = asking.events
    assert event.name == attr.APPROVAL_REQUESTED
    assert dict(event.attributes or {}) == {
        attr.ACTION_ID: action.action_id,
        attr.TOOL_NAME: "git_push",
        attr.ARGS_SHA256: action.args_sha256,
        attr.DECISION: "ask",
        "riverbeam.expires_at": action.expires_at,
    }
    # the asking run's context, on the action as the store keeps it
    stored = store.get_action(action.action_id)
    assert stored is not None
    flags = f"{asking.context.trace_flags:02x}"
    assert stored.traceparent == f"00-{asking.context.trace_id:032x}-{asking.context.span_id:016x}-{flags}"
    # and on the approval event, for a consumer's spans to link to
    assert [e.detail.get("traceparent") for e in log] == [stored.traceparent]

    recorded.clear()
    loop.resume(resume_body(asked))
    assert recorded.still_open() == []
    resuming = recorded.one("invoke_agent author")
    assert resuming.context is not None and resuming.context.trace_id != asking.context.trace_id
    assert attributes(resuming)[attr.RUN_KIND] == "resume"
    assert attributes(resuming)[attr.RUN_STATUS] == "completed"
    assert resuming.parent is None  # no span was open across the wait
    (link,) = resuming.links
    assert (link.context.trace_id, link.context.span_id) == (asking.context.trace_id, asking.context.span_id)
    told = dict(link.attributes or {})
    assert told[attr.ACTION_ID] == action.action_id and told[attr.RESPONSE] == "submitted"
    assert told[attr.DECIDED_BY] == "u1" and told[attr.ASKED_AT] == stored.created_at
    assert in_trace(recorded, resuming.context.trace_id) == [
        "chat ScriptedModel",
        "execute_tool git_push",
        "invoke_agent author",
    ]
    push = attributes(recorded.one("execute_tool git_push"))
    assert push[attr.DECISION] == "ask" and push[attr.DECIDED_BY] == "u1"
    assert push[attr.ACTION_ID] == push[attr.TOOL_CALL_ID] == action.action_id
    assert push[attr.ARGS_SHA256] == action.args_sha256
    assert attr.TOOL_CALL_ARGUMENTS not in push and attr.TOOL_CALL_RESULT not in push


def test_a_refused_action_runs_no_tool_and_the_link_says_so(recorded: Recorded) -> None:
    loop = beam(InMemoryStore(), *LOOP[1:], ModelTurn(text="Understood."))
    asked = loop.invoke(invoke_body())
    recorded.clear()
    loop.resume(resume_body(asked, status="cancelled"))
    assert recorded.named("execute_tool git_push") == []
    (link,) = recorded.one("invoke_agent author").links
    assert dict(link.attributes or {})[attr.RESPONSE] == "cancelled"


def test_args_and_results_are_on_the_spans_only_when_asked(
    recorded: Recorded, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(attr.CAPTURE_ARGS_ENV, "true")
    loop = beam(InMemoryStore(), *LOOP[1:])
    loop.resume(resume_body(loop.invoke(invoke_body())))
    push = attributes(recorded.one("execute_tool git_push"))
    assert push[attr.TOOL_CALL_ARGUMENTS] == '{"ref": "docs/x"}'
    assert push[attr.TOOL_CALL_RESULT] == '{"pushed": "docs/x"}'


def test_a_failing_tool_and_a_failing_model_end_their_spans_with_their_errors(recorded: Recorded) -> None:
    push_rejected = ModelTurn(
        text="Pushing.", tool_calls=[ToolCall(name="git_push", args={"ref": "rejected"})]
    )
    loop = beam(InMemoryStore(), push_rejected, ModelTurn(text="It failed."))
    loop.resume(resume_body(loop.invoke(invoke_body())))
    push = recorded.one("execute_tool git_push")
    assert push.status.status_code == StatusCode.ERROR and attributes(push)[attr.ERROR_TYPE] == "BEM-330"
    assert recorded.still_open() == []

    recorded.clear()

    def broken(conversation: Any) -> ModelTurn:
        raise RuntimeError("the model is down")

    failing = beam(InMemoryStore(), broken)
    with pytest.raises(Exception, match="the agent failed"):
        failing.invoke(invoke_body())
    assert recorded.still_open() == []
    chat = recorded.one("chat ScriptedModel")
    assert chat.status.status_code == StatusCode.ERROR
    assert [e.name for e in chat.events] == ["exception"]
    run = recorded.one("invoke_agent author")
    assert run.status.status_code == StatusCode.ERROR
    assert attributes(run)[attr.ERROR_TYPE] == "BEM-500" and attributes(run)[attr.RUN_STATUS] == "failed"


def test_untraced_the_action_keeps_no_context_and_the_resume_links_nothing() -> None:
    """Without a tracer provider (a deployment without ADOT) nothing is stored nor told."""
    log = EventLog()
    loop = beam(InMemoryStore(), *LOOP)
    loop.set_event_sink(log)
    asked = loop.invoke(invoke_body())
    stored = loop.store.get_action(asked.action_required[0].action_id)
    assert stored is not None and stored.traceparent is None
    loop.resume(resume_body(asked))
    assert [e.detail_type for e in log] == ["Approval Requested", "Approval Decided"]
    assert all("traceparent" not in e.detail for e in log)


POLICY = """\
@id("docs-unattended") permit (principal, action == Action::"run_unattended", resource == Tool::"git_push")
  when { context.args has ref && context.args.ref like "docs/*" };
@id("no-force") forbid (principal, action, resource == Tool::"git_push")
  when { context.args has force && context.args.force == true };
"""


def test_a_policys_allow_and_deny_say_who_decided(recorded: Recorded) -> None:
    from riverbeam import Policy

    calls = [
        ToolCall(name="git_push", args={"ref": "docs/x"}),  # the policy runs it unasked
        ToolCall(name="git_push", args={"ref": "docs/y", "force": True}),  # the policy forbids it
    ]

    @tool(confirm_required=True)
    def git_push(ref: str, force: bool = False) -> dict[str, str]:
        """Push a branch."""
        return {"pushed": ref}

    loop = RiverBeam(InMemoryStore())
    model = ScriptedModel([ModelTurn(tool_calls=calls), ModelTurn(text="Done.")])
    loop.register_agent("author", ToolAgentRunner(model=model, tools=[git_push]), policy=Policy(POLICY))
    result = loop.invoke(invoke_body())
    assert not result.interrupted
    (ran,) = recorded.named("execute_tool git_push")
    assert attributes(ran)[attr.DECISION] == "allow"
    assert attributes(ran)[attr.DECIDED_BY] == "policy:docs-unattended"
    run = recorded.one("invoke_agent author")
    (denied,) = [e for e in run.events if e.name == attr.CALL_DENIED]
    assert dict(denied.attributes or {}) | {attr.TOOL_CALL_ID: "-"} == {
        attr.TOOL_NAME: "git_push",
        attr.TOOL_CALL_ID: "-",
        attr.DECISION: "deny",
        attr.DECIDED_BY: "policy:no-force",
    }
    assert recorded.still_open() == []

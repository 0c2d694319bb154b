"""The span helpers, through OpenTelemetry's SDK and its in-memory exporter: GenAI names and attributes,
args only when RIVERBEAM_CAPTURE_ARGS is true, every span ended (errors included), and the trace context
that an Action keeps and a queue message carries."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from beam_store.records import TokenUsage
from opentelemetry import trace
from opentelemetry.trace import StatusCode
from riverbeam.telemetry import attributes as attr
from riverbeam.telemetry import carriers, spans, trace_context

from tests.support.spans import Recorded, recording


@pytest.fixture
def recorded() -> Iterator[Recorded]:
    yield from recording()


RUN = {
    "agent_name": "author",
    "session_id": "s-1",
    "interaction_id": "i-1",
    "run_id": "r-1",
    "kind": "invoke",
    "agent_id": "a-1",
}


def test_a_run_with_a_model_call_and_a_tool_call_is_one_tree_in_genai_terms(recorded: Recorded) -> None:
    with spans.agent_span(**RUN):
        with spans.chat_span(model="anthropic.claude", provider="aws.bedrock") as chat:
            spans.usage(chat, TokenUsage(input_tokens=12, output_tokens=5))
        with spans.tool_span(tool="git_push", call_id="c-1", args={"ref": "main"}, decision="allow") as tool:
            spans.tool_outcome(tool, status="ok", output="pushed")

    run = recorded.one("invoke_agent author")
    assert run.attributes == {
        attr.OPERATION: "invoke_agent",
        attr.AGENT_NAME: "author",
        attr.AGENT_ID: "a-1",
        attr.CONVERSATION_ID: "s-1",
        attr.INTERACTION_ID: "i-1",
        attr.RUN_ID: "r-1",
        attr.RUN_KIND: "invoke",
    }
    chat_span = recorded.one("chat anthropic.claude")
    assert chat_span.kind == trace.SpanKind.CLIENT
    assert chat_span.attributes is not None
    assert chat_span.attributes[attr.PROVIDER] == "aws.bedrock"
    assert chat_span.attributes[attr.INPUT_TOKENS] == 12 and chat_span.attributes[attr.OUTPUT_TOKENS] == 5
    tool_span = recorded.one("execute_tool git_push")
    assert tool_span.attributes is not None
    assert tool_span.attributes[attr.TOOL_NAME] == "git_push"
    assert tool_span.attributes[attr.TOOL_CALL_ID] == "c-1"
    assert tool_span.attributes[attr.DECISION] == "allow"
    assert run.context is not None
    for child in (chat_span, tool_span):
        assert child.parent is not None and child.parent.span_id == run.context.span_id
        assert child.context is not None and child.context.trace_id == run.context.trace_id
    assert recorded.still_open() == []


def test_args_and_results_go_on_a_span_only_when_asked(
    recorded: Recorded, monkeypatch: pytest.MonkeyPatch
) -> None:
    for setting in (None, "false", "1", "TRUE", "true"):
        if setting is None:
            monkeypatch.delenv(attr.CAPTURE_ARGS_ENV, raising=False)
        else:
            monkeypatch.setenv(attr.CAPTURE_ARGS_ENV, setting)
        with spans.tool_span(tool="git_push", call_id=f"c-{setting}", args={"ref": "x"}, decision="ask") as s:
            spans.tool_outcome(s, status="ok", output={"pushed": "x"})
    captured = {
        str(s.attributes[attr.TOOL_CALL_ID]): (
            s.attributes.get(attr.TOOL_CALL_ARGUMENTS),
            s.attributes.get(attr.TOOL_CALL_RESULT),
        )
        for s in recorded.named("execute_tool git_push")
        if s.attributes is not None
    }
    assert captured == {
        "c-None": (None, None),
        "c-false": (None, None),
        "c-1": (None, None),
        "c-TRUE": ('{"ref": "x"}', '{"pushed": "x"}'),
        "c-true": ('{"ref": "x"}', '{"pushed": "x"}'),
    }


def test_captured_args_are_cut_to_the_limit(recorded: Recorded, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(attr.CAPTURE_ARGS_ENV, "true")
    with spans.tool_span(tool="write", call_id="c", args={"text": "x" * 100_000}, decision="allow"):
        pass
    attributes = recorded.one("execute_tool write").attributes
    assert attributes is not None
    value = str(attributes[attr.TOOL_CALL_ARGUMENTS])
    assert len(value) == attr.CAPTURE_LIMIT and value.endswith("…")


def test_every_span_ends_when_its_call_raises(recorded: Recorded) -> None:
    with pytest.raises(RuntimeError), spans.agent_span(**RUN), spans.chat_span(model="m", provider="p"):
        raise RuntimeError("the model failed")
    assert recorded.still_open() == []
    for name in ("invoke_agent author", "chat m"):
        span = recorded.one(name)
        assert span.status.status_code == StatusCode.ERROR
        assert [e.name for e in span.events] == ["exception"]


def test_a_tool_error_and_a_failed_run_carry_their_code(recorded: Recorded) -> None:
    with spans.agent_span(**RUN) as run:
        with spans.tool_span(tool="git_push", call_id="c", args={}, decision="ask", decided_by="u1") as s:
            spans.tool_outcome(s, status="error", code="BEM-330")
        spans.failed(run, "BEM-041", "too many turns")
    tool = recorded.one("execute_tool git_push")
    assert tool.status.status_code == StatusCode.ERROR
    assert tool.attributes is not None
    assert tool.attributes[attr.ERROR_TYPE] == "BEM-330" and tool.attributes[attr.DECIDED_BY] == "u1"
    agent = recorded.one("invoke_agent author")
    assert agent.status.status_code == StatusCode.ERROR
    assert agent.status.description == "BEM-041: too many turns"


def test_an_asked_action_is_an_event_of_the_asking_run(recorded: Recorded) -> None:
    with spans.agent_span(**RUN) as run:
        spans.approval_requested(
            run, action_id="act-1", tool="git_push", args_sha256="ab" * 32, expires_at="2026-01-01T00:00:00Z"
        )
    (event,) = recorded.one("invoke_agent author").events
    assert event.name == attr.APPROVAL_REQUESTED
    assert dict(event.attributes or {}) == {
        attr.ACTION_ID: "act-1",
        attr.TOOL_NAME: "git_push",
        attr.ARGS_SHA256: "ab" * 32,
        attr.DECISION: "ask",
        "riverbeam.expires_at": "2026-01-01T00:00:00Z",
    }


def test_the_stored_context_of_the_asking_run_links_the_resuming_run_to_it(recorded: Recorded) -> None:
    assert trace_context.current_traceparent() is None
    with spans.agent_span(**RUN):
        stored = trace_context.current_traceparent()
    assert stored is not None
    link = trace_context.link_to(stored, {attr.ACTION_ID: "act-1"})
    assert link is not None
    with spans.agent_span(**{**RUN, "run_id": "r-2", "kind": "resume"}, links=[link]):
        pass
    asking, resuming = recorded.named("invoke_agent author")
    assert asking.context is not None and resuming.context is not None
    assert (
        stored
        == f"00-{asking.context.trace_id:032x}-{asking.context.span_id:016x}-{asking.context.trace_flags:02x}"
    )
    assert asking.context.trace_flags.sampled
    # another trace: nothing was open across the wait; the link says where it came from
    assert resuming.context.trace_id != asking.context.trace_id
    (linked,) = resuming.links
    assert linked.context.trace_id == asking.context.trace_id
    assert linked.context.span_id == asking.context.span_id
    assert dict(linked.attributes or {}) == {attr.ACTION_ID: "act-1"}


@pytest.mark.parametrize("stored", [None, "", "not a traceparent", "00-" + "0" * 32 + "-" + "0" * 16 + "-01"])
def test_an_action_without_a_valid_stored_context_gives_no_link(stored: str | None) -> None:
    assert trace_context.link_to(stored) is None


def test_a_queue_message_carries_the_requests_context_to_the_run(recorded: Recorded) -> None:
    assert carriers.outgoing() == {}
    with spans.tool_span(tool="request", call_id="c", args={}, decision="allow"):
        headers = carriers.outgoing()
    attributes = carriers.sqs_attributes(headers)
    assert attributes["traceparent"]["DataType"] == "String"
    # Lambda's SQS event names them in camelCase
    record = {"messageAttributes": {k: {"stringValue": v["StringValue"]} for k, v in attributes.items()}}
    received = carriers.from_sqs_record(record)
    assert received == headers
    parent = trace_context.context_from(received)
    assert parent is not None
    with spans.agent_span(**RUN, parent=parent):
        pass
    request, run = recorded.one("execute_tool request"), recorded.one("invoke_agent author")
    assert request.context is not None and run.parent is not None
    assert run.parent.span_id == request.context.span_id
    assert carriers.from_sqs_record({}) == {} and carriers.from_sqs_record({"messageAttributes": None}) == {}
    assert trace_context.context_from({"traceparent": "garbage"}) is None


def test_without_a_tracer_provider_no_span_is_made_and_nothing_is_carried() -> None:
    assert not spans.traced()
    with (
        spans.agent_span(**RUN) as run,
        spans.tool_span(tool="t", call_id="c", args={}, decision="allow") as tool,
    ):
        assert run is tool is trace.INVALID_SPAN
        spans.tool_outcome(tool, status="error", code="BEM-330")  # a no-op, no error
        assert trace_context.current_traceparent() is None and carriers.outgoing() == {}


def test_who_decided_unasked_is_the_policy_with_its_ids_or_the_grant() -> None:
    assert spans.decided_by({"kind": "policy", "policy_ids": ["a", "b"]}) == "policy:a,b"
    assert spans.decided_by({"kind": "policy", "policy_ids": []}) == "policy"
    assert spans.decided_by({"kind": "grant", "grant_id": "g-1"}) == "grant:g-1"
    assert spans.decided_by(None) is None

"""Telemetry through the Lambda handlers on moto: a request traced by the deployment (ADOT's span around
the handler) hands its trace context to the worker in the job's SQS message attributes, and the worker's
run continues that trace; untraced, a job carries no attributes. The events function sends the approvals'
metrics for the events it puts on the bus (a person's wait by tool and decision, a refusal, an expiry), and
the sweep what still waits, as EMF records on stdout."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from riverbeam import AgentResult
from riverbeam.aws import runtime
from riverbeam.telemetry import attributes as attr
from riverbeam_local.lambda_like import scheduled_event

from tests.support.agents import invoke_body, resume_body
from tests.support.clock import Clock
from tests.support.lambda_stack import Stack, http_event, lambda_stack
from tests.support.spans import Recorded, recording


@pytest.fixture
def recorded() -> Iterator[Recorded]:
    yield from recording()


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[Stack]:
    with lambda_stack(tmp_path) as found:
        yield found


def _invoke(stack: Stack) -> AgentResult:
    answer = stack.call("invoke", http_event("invoke/http", body=invoke_body()))
    assert answer["statusCode"] == 200, answer
    return AgentResult.model_validate(json.loads(answer["body"]))


def _metrics(out: str, name: str) -> list[dict[str, Any]]:
    """The EMF records of metric `name` printed, each as {value, and its dimensions}."""
    found = []
    for line in out.splitlines():
        if not line.startswith("{"):
            continue
        record = json.loads(line)
        for directive in record.get("_aws", {}).get("CloudWatchMetrics", []):
            if any(m["Name"] == name for m in directive["Metrics"]):
                value = record[name]
                dims = {d for dimension_set in directive["Dimensions"] for d in dimension_set}
                found.append(
                    {"value": value[0] if isinstance(value, list) else value} | {d: record[d] for d in dims}
                )
    return found


def test_a_traced_request_and_the_run_the_worker_makes_of_it_are_one_trace(
    stack: Stack, recorded: Recorded
) -> None:
    asked = _invoke(stack)
    request = trace.get_tracer("adot").start_span("POST /resume", kind=trace.SpanKind.SERVER)
    with trace.use_span(request, end_on_exit=True):
        answered = stack.call("resume", http_event("resume/http", body=resume_body(asked)))
    assert answered["statusCode"] == 202
    (record,) = stack.receive()
    sent = record["messageAttributes"]["traceparent"]["stringValue"]
    context = request.get_span_context()
    assert sent == f"00-{context.trace_id:032x}-{context.span_id:016x}-{context.trace_flags:02x}"
    assert stack.run_worker([record]) == []
    resumed = [
        s
        for s in recorded.named("invoke_agent author")
        if dict(s.attributes or {})[attr.RUN_KIND] == "resume"
    ]
    (run,) = resumed
    assert run.parent is not None and run.parent.span_id == context.span_id
    assert run.context is not None and run.context.trace_id == context.trace_id
    assert len(run.links) == 1  # and it links to the run that asked
    assert recorded.still_open() == []


def test_an_untraced_request_sends_no_trace_context(stack: Stack) -> None:
    asked = _invoke(stack)
    stack.call("resume", http_event("resume/http", body=resume_body(asked)))
    (record,) = stack.receive()
    assert record["messageAttributes"] == {}
    assert stack.run_worker([record]) == []


def test_the_events_function_tells_decisions_and_expiries_and_the_sweep_what_waits(
    stack: Stack, capsys: pytest.CaptureFixture[str]
) -> None:
    approved, refused, forgotten = _invoke(stack), _invoke(stack), _invoke(stack)
    for result, status in ((approved, "submitted"), (refused, "cancelled")):
        answered = stack.call("resume", http_event("resume/http", body=resume_body(result, status)))
        assert answered["statusCode"] == 202
    assert stack.drain() == []
    capsys.readouterr()
    swept = stack.call("sweep", scheduled_event("riverbeam-sweep"))
    assert swept == {"expired": []}
    out = capsys.readouterr().out
    assert [m["value"] for m in _metrics(out, "ApprovalsPending")] == [1]
    (oldest,) = _metrics(out, "OldestPendingApprovalAge")
    assert 0 <= oldest["value"] < 600 and oldest["service"] == "riverbeam"

    assert stack.publish() == []
    out = capsys.readouterr().out
    latency = _metrics(out, "ApprovalLatency")
    assert sorted((m["tool"], m["decision"]) for m in latency) == [
        ("git_push", "cancelled"),
        ("git_push", "submitted"),
    ]
    assert all(m["value"] >= 0 for m in latency)
    assert [(m["tool"], m["decision"], m["value"]) for m in _metrics(out, "ToolDenied")] == [
        ("git_push", "cancelled", 1)
    ]
    assert _metrics(out, "ApprovalsExpired") == []

    runtime.beam()._setup.clock = Clock(runtime.beam()._setup.clock() + timedelta(days=2))
    swept = stack.call("sweep", scheduled_event("riverbeam-sweep"))
    assert swept == {"expired": [forgotten.action_required[0].action_id]}
    assert stack.publish() == []
    out = capsys.readouterr().out
    assert [(m["tool"], m["value"]) for m in _metrics(out, "ApprovalsExpired")] == [("git_push", 1)]

"""The local stack's traces file and `riverbeam trace`'s reading of it: spans written as OTLP JSON lines
and read back; a run, the run that resumed it (linked, in another trace) and the wait between them
printed as one story."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import Link, StatusCode, set_span_in_context
from riverbeam_local.clients import trace_tree
from riverbeam_local.stack.trace_file import OtlpJsonLinesExporter

SECOND = 1_000_000_000
START = 1_700_000_000 * SECOND


def write_story(path: Path) -> None:
    """An invoke that asks for git_push, answered 3 min 12 s later by a resume that runs it; and an
    unrelated run. Times are given, so the printed timings are known."""
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(OtlpJsonLinesExporter(path)))
    tracer = provider.get_tracer("riverbeam")
    run = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "author"}
    asking = tracer.start_span(
        "invoke_agent author",
        attributes={
            **run,
            "riverbeam.run.id": "r-1",
            "riverbeam.run.kind": "invoke",
            "riverbeam.run.status": "interrupted",
        },
        start_time=START,
    )
    chat = tracer.start_span(
        "chat offline",
        context=__import__("opentelemetry.trace", fromlist=["set_span_in_context"]).set_span_in_context(
            asking
        ),
        attributes={
            "gen_ai.operation.name": "chat",
            "gen_ai.usage.input_tokens": 7,
            "gen_ai.usage.output_tokens": 3,
        },
        start_time=START + SECOND // 100,
    )
    chat.end(end_time=START + SECOND // 10)
    asking.add_event(
        "riverbeam.approval.requested", {"riverbeam.action.id": "act-1", "gen_ai.tool.name": "git_push"}
    )
    asking.end(end_time=START + SECOND // 5)
    link = Link(
        asking.get_span_context(),
        {"riverbeam.action.id": "act-1", "riverbeam.response": "submitted", "riverbeam.decided_by": "u1"},
    )
    resumed_at = START + SECOND // 5 + 192 * SECOND
    resuming = tracer.start_span(
        "invoke_agent author",
        attributes={
            **run,
            "riverbeam.run.id": "r-2",
            "riverbeam.run.kind": "resume",
            "riverbeam.run.status": "completed",
        },
        links=[link],
        start_time=resumed_at,
    )
    tool = tracer.start_span(
        "execute_tool git_push",
        context=set_span_in_context(resuming),
        attributes={"riverbeam.decision": "ask", "riverbeam.decided_by": "u1"},
        start_time=resumed_at + SECOND // 100,
    )
    tool.set_status(StatusCode.ERROR, "BEM-330")
    tool.end(end_time=resumed_at + SECOND // 50)
    resuming.end(end_time=resumed_at + SECOND)
    other = tracer.start_span(
        "invoke_agent other", attributes={**run, "riverbeam.run.id": "r-9"}, start_time=START
    )
    other.end(end_time=START + SECOND)
    provider.shutdown()


def test_spans_are_kept_as_otlp_json_lines(tmp_path: Path) -> None:
    path = tmp_path / "traces" / "spans.jsonl"
    write_story(path)
    lines = path.read_text().splitlines()
    assert len(lines) == 5  # one export per span as it ends
    first = json.loads(lines[0])["resourceSpans"][0]
    assert first["scopeSpans"][0]["scope"]["name"] == "riverbeam"
    span = first["scopeSpans"][0]["spans"][0]
    assert span["name"] == "chat offline" and len(span["traceId"]) == 32 and len(span["spanId"]) == 16
    assert span["kind"] == 1 and span["startTimeUnixNano"] == str(START + SECOND // 100)
    assert {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "7"}} in span["attributes"]


def test_a_run_is_printed_with_the_run_that_resumed_it_and_the_wait_between(tmp_path: Path) -> None:
    write_story(tmp_path / trace_tree.TRACES_FILE)
    spans = list(trace_tree.read_spans(tmp_path / trace_tree.TRACES_FILE))
    for run_id in ("r-1", "r-2"):  # from either end, the same story
        runs = trace_tree.linked_runs(spans, run_id)
        assert [r.attributes["riverbeam.run.id"] for r in runs] == ["r-1", "r-2"]
        assert trace_tree.render(spans, runs) == [
            "invoke_agent author  +0.0 ms  200.0 ms  run r-1 (invoke), interrupted",
            "  asks a person: git_push action act-1",
            "  chat offline  +10.0 ms  90.0 ms  tokens 7 in, 3 out",
            "  ... waited 3 min 12 s for a person: action act-1 submitted by u1",
            "invoke_agent author  +3 min 12 s  1.00 s  run r-2 (resume), completed",
            "  execute_tool git_push  +3 min 12 s  10.0 ms  ask, decided by u1, error BEM-330",
        ]
    assert trace_tree.linked_runs(spans, "r-404") == []


def test_the_command_says_where_it_looked_when_there_is_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert trace_tree.main(["r-1", "--data-dir", str(tmp_path)]) == 1
    assert "no traces in" in capsys.readouterr().err
    write_story(tmp_path / trace_tree.TRACES_FILE)
    with (tmp_path / trace_tree.TRACES_FILE).open("a") as cut_short:
        cut_short.write('{"resourceSpans": [\n')
    assert trace_tree.main(["r-404\x1b[31m", "--data-dir", str(tmp_path)]) == 1
    assert "no run r-404\\x1b[31m in" in capsys.readouterr().err
    assert trace_tree.main(["r-2", "--data-dir", str(tmp_path)]) == 0
    assert "waited 3 min 12 s" in capsys.readouterr().out

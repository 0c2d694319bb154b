"""The local stack's traces file and `riverbeam trace`'s reading of it: spans written as OTLP JSON lines
and read back; a run, the run that resumed it (linked, in another trace) and the wait between them
printed as one story. The traces and the records file are readable by their owner alone."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import Link, StatusCode, set_span_in_context
from riverbeam_local.clients import trace_tree
from riverbeam_local.stack import snapshot
from riverbeam_local.stack.trace_file import OtlpJsonLinesExporter

SECOND = 1_000_000_000
START = 1_700_000_000 * SECOND
# the asking run and the run that resumed it, in one session; a later run there; another session's run,
# whose id begins as the asking run's does
ASKING = "2c1e585e-3226-46c5-bc3e-e789d89d9431"
RESUMING = "da249042-3226-46c5-bc3e-e789d89d943f"
LATER = "5f0c8d7e-1b2a-4c3d-9e8f-0a1b2c3d4e5f"
OTHER = "2c1e585e-ffff-46c5-bc3e-000000000009"
SESSION = "21bbbedb-e96e-4b82-b126-5aedbd91c76e"
OTHER_SESSION = "77777777-e96e-4b82-b126-5aedbd91c76e"


def write_story(path: Path) -> None:
    """An invoke that asks for git_push, answered 3 min 12 s later by a resume that runs it, then another
    invoke of that session; and a run of another session. Times are given, so the printed timings are
    known."""
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(OtlpJsonLinesExporter(path)))
    tracer = provider.get_tracer("riverbeam")
    run = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "author",
        "gen_ai.conversation.id": SESSION,
    }
    asking = tracer.start_span(
        "invoke_agent author",
        attributes={
            **run,
            "riverbeam.run.id": ASKING,
            "riverbeam.run.kind": "invoke",
            "riverbeam.run.status": "interrupted",
        },
        start_time=START,
    )
    chat = tracer.start_span(
        "chat offline",
        context=set_span_in_context(asking),
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
            "riverbeam.run.id": RESUMING,
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
    later = tracer.start_span(
        "invoke_agent author",
        attributes={**run, "riverbeam.run.id": LATER, "riverbeam.run.kind": "invoke"},
        start_time=resumed_at + 2 * SECOND,
    )
    later.end(end_time=resumed_at + 2 * SECOND + SECOND // 2)
    other = tracer.start_span(
        "invoke_agent other",
        attributes={**run, "riverbeam.run.id": OTHER, "gen_ai.conversation.id": OTHER_SESSION},
        start_time=START,
    )
    other.end(end_time=START + SECOND)
    provider.shutdown()


def test_spans_are_kept_as_otlp_json_lines(tmp_path: Path) -> None:
    path = tmp_path / "traces" / "spans.jsonl"
    write_story(path)
    lines = path.read_text().splitlines()
    assert len(lines) == 6  # one export per span as it ends
    first = json.loads(lines[0])["resourceSpans"][0]
    assert first["scopeSpans"][0]["scope"]["name"] == "riverbeam"
    span = first["scopeSpans"][0]["spans"][0]
    assert span["name"] == "chat offline" and len(span["traceId"]) == 32 and len(span["spanId"]) == 16
    assert span["kind"] == 1 and span["startTimeUnixNano"] == str(START + SECOND // 100)
    assert {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "7"}} in span["attributes"]


def test_a_run_is_printed_with_the_run_that_resumed_it_and_the_wait_between(tmp_path: Path) -> None:
    write_story(tmp_path / trace_tree.TRACES_FILE)
    spans = trace_tree.read_traces(tmp_path / trace_tree.TRACES_FILE).spans
    for run_id in (ASKING, RESUMING):  # from either end, the same story
        runs = trace_tree.linked_runs(spans, run_id)
        assert [r.attributes["riverbeam.run.id"] for r in runs] == [ASKING, RESUMING]
        assert trace_tree.render(spans, runs) == [
            f"invoke_agent author  +0.0 ms  200.0 ms  run {ASKING} (invoke), interrupted",
            "  asks a person: git_push action act-1",
            "  chat offline  +10.0 ms  90.0 ms  tokens 7 in, 3 out",
            "  ... waited 3 min 12 s for a person: action act-1 submitted by u1",
            f"invoke_agent author  +3 min 12 s  1.00 s  run {RESUMING} (resume), completed",
            "  execute_tool git_push  +3 min 12 s  10.0 ms  ask, decided by u1, error BEM-330",
        ]
    assert trace_tree.linked_runs(spans, "r-404") == []
    assert [r.run_id for r in trace_tree.linked_runs(spans, OTHER)] == [OTHER]  # links, not ids, join runs


@pytest.fixture
def open_umask() -> Iterator[None]:
    """No umask: what a file's mode is comes from its writer alone."""
    previous = os.umask(0)
    try:
        yield
    finally:
        os.umask(previous)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.usefixtures("open_umask")
def test_the_traces_are_readable_by_their_owner_alone(tmp_path: Path) -> None:
    path = tmp_path / trace_tree.TRACES_FILE
    write_story(path)
    assert mode(path.parent) == 0o700 and mode(path) == 0o600
    # an earlier run's looser directory and file are made private again, and kept
    os.chmod(path.parent, 0o755)
    os.chmod(path, 0o644)
    exporter = OtlpJsonLinesExporter(path)
    exporter.shutdown()
    assert mode(path.parent) == 0o700 and mode(path) == 0o600
    assert len(path.read_text().splitlines()) == 6


@pytest.mark.usefixtures("open_umask")
def test_the_records_file_is_readable_by_its_owner_alone(tmp_path: Path) -> None:
    path = tmp_path / "records.json"
    # a crash's leftover draft, world-readable, is not reused as it is
    (tmp_path / ".records.json.tmp").write_text("stale")
    os.chmod(tmp_path / ".records.json.tmp", 0o644)
    snapshot.write(path, {"format": snapshot.FORMAT, "items": [], "messages": {}})
    assert mode(path) == 0o600
    assert snapshot.read(path) == {"format": snapshot.FORMAT, "items": [], "messages": {}}
    snapshot.write_objects(tmp_path / "content", {"ab/cd": b"large content"})
    assert mode(tmp_path / "content" / "ab" / "cd") == 0o600
    assert (tmp_path / "content" / "ab" / "cd").read_bytes() == b"large content"

"""`riverbeam trace RUN_ID`: a run's spans, from the OTLP JSON lines `riverbeam dev --traces` keeps, as a
tree with timings. A run that asked a person and the run that resumed are two traces joined by a span link
(no span stays open while a person decides): the runs linked to RUN_ID, before and after it, are printed in
order, and the wait between them as the gap from the asking run's end to the resuming run's start."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..display import visible
from ..stack_secret import DEFAULT_DATA_DIR

TRACES_FILE = Path("traces") / "spans.jsonl"
# how many runs a story follows through its links at most (an interaction answered in many parts)
MAX_RUNS = 200


@dataclass
class SpanRecord:
    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    links: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    error: str | None = None

    @property
    def is_run(self) -> bool:
        return self.attributes.get("gen_ai.operation.name") == "invoke_agent"


def _value(encoded: dict[str, Any]) -> Any:
    """An OTLP JSON AnyValue as Python."""
    if "stringValue" in encoded:
        return encoded["stringValue"]
    if "intValue" in encoded:
        return int(encoded["intValue"])
    if "arrayValue" in encoded:
        return [_value(v) for v in encoded["arrayValue"].get("values", [])]
    for key in ("boolValue", "doubleValue"):
        if key in encoded:
            return encoded[key]
    return None


def _attributes(encoded: Iterable[dict[str, Any]] | None) -> dict[str, Any]:
    return {kv["key"]: _value(kv.get("value", {})) for kv in encoded or []}


def _span(encoded: dict[str, Any]) -> SpanRecord:
    status = encoded.get("status") or {}
    return SpanRecord(
        trace_id=encoded["traceId"],
        span_id=encoded["spanId"],
        parent_id=encoded.get("parentSpanId") or None,
        name=encoded["name"],
        start_ns=int(encoded["startTimeUnixNano"]),
        end_ns=int(encoded["endTimeUnixNano"]),
        attributes=_attributes(encoded.get("attributes")),
        links=[
            (k["traceId"], k["spanId"], _attributes(k.get("attributes"))) for k in encoded.get("links", [])
        ],
        events=[(e["name"], _attributes(e.get("attributes"))) for e in encoded.get("events", [])],
        error=(status.get("message") or "error") if status.get("code") == 2 else None,
    )


def read_spans(path: Path) -> Iterator[SpanRecord]:
    """Every span of the file; a line that is not an export request (cut short by a crash) is skipped."""
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            try:
                request = json.loads(line)
                encoded = [
                    s
                    for resource in request["resourceSpans"]
                    for scope in resource["scopeSpans"]
                    for s in scope["spans"]
                ]
                found = [_span(s) for s in encoded]
            except (ValueError, KeyError, TypeError):
                continue
            yield from found


def linked_runs(spans: list[SpanRecord], run_id: str) -> list[SpanRecord]:
    """The run's span and the runs linked to it, directly or through others, oldest first ([]: not found)."""
    runs = [s for s in spans if s.is_run]
    start = [s for s in runs if s.attributes.get("riverbeam.run.id") == run_id]
    story = {s.span_id: s for s in start}
    for _ in range(MAX_RUNS):
        more = {
            s.span_id: s
            for s in runs
            if s.span_id not in story
            and (
                any(span_id in story for _, span_id, _ in s.links)
                or any(span_id == s.span_id for r in story.values() for _, span_id, _ in r.links)
            )
        }
        if not more or len(story) >= MAX_RUNS:
            break
        story.update(more)
    return sorted(story.values(), key=lambda s: s.start_ns)


def duration(ns: int) -> str:
    seconds = ns / 1e9
    if seconds < 1:
        return f"{ns / 1e6:.1f} ms"
    if seconds < 60:
        return f"{seconds:.2f} s"
    if seconds < 3600:
        return f"{int(seconds // 60)} min {int(seconds % 60)} s"
    return f"{int(seconds // 3600)} h {int(seconds % 3600 // 60)} min"


def _notes(span: SpanRecord) -> str:
    """What a span's line says beside its name: how a tool came to run, who decided, its error."""
    a = span.attributes
    notes = []
    if a.get("riverbeam.decision"):
        notes.append(str(a["riverbeam.decision"]))
    if a.get("riverbeam.decided_by"):
        notes.append(f"decided by {a['riverbeam.decided_by']}")
    if span.is_run:
        notes.append(f"run {a.get('riverbeam.run.id')} ({a.get('riverbeam.run.kind')})")
        if a.get("riverbeam.run.status"):
            notes.append(str(a["riverbeam.run.status"]))
    tokens = [a.get("gen_ai.usage.input_tokens"), a.get("gen_ai.usage.output_tokens")]
    if any(tokens):
        notes.append(f"tokens {tokens[0] or 0} in, {tokens[1] or 0} out")
    if span.error:
        notes.append(f"error {span.error}")
    return visible(", ".join(notes))


def _tree(span: SpanRecord, children: dict[str, list[SpanRecord]], origin: int, depth: int) -> Iterator[str]:
    offset, took = duration(span.start_ns - origin), duration(span.end_ns - span.start_ns)
    yield f"{'  ' * depth}{visible(span.name)}  +{offset}  {took}  {_notes(span)}".rstrip()
    for name, attributes in span.events:
        if name == "riverbeam.approval.requested":
            yield (
                f"{'  ' * (depth + 1)}asks a person: {visible(str(attributes.get('gen_ai.tool.name')))} "
                f"action {attributes.get('riverbeam.action.id')}"
            )
    for child in sorted(children.get(span.span_id, []), key=lambda s: s.start_ns):
        yield from _tree(child, children, origin, depth + 1)


def _wait(run: SpanRecord, earlier: dict[str, SpanRecord]) -> Iterator[str]:
    """The person's wait before a resuming run: from the end of the run it links to, to its start."""
    for _, span_id, attributes in run.links:
        asking = earlier.get(span_id)
        if asking is None:
            continue
        gap = duration(max(0, run.start_ns - asking.end_ns))
        answer = attributes.get("riverbeam.response") or "answered"
        who = attributes.get("riverbeam.decided_by")
        yield visible(
            f"  ... waited {gap} for a person: action {attributes.get('riverbeam.action.id')} "
            f"{answer}{f' by {who}' if who else ''}"
        )


def render(spans: list[SpanRecord], runs: list[SpanRecord]) -> list[str]:
    children: dict[str, list[SpanRecord]] = {}
    for span in spans:
        if span.parent_id is not None:
            children.setdefault(span.parent_id, []).append(span)
    origin = runs[0].start_ns
    lines: list[str] = []
    earlier: dict[str, SpanRecord] = {}
    for run in runs:
        lines.extend(_wait(run, earlier))
        lines.extend(_tree(run, children, origin, 0))
        earlier[run.span_id] = run
    return lines


def parser() -> argparse.ArgumentParser:
    found = argparse.ArgumentParser(
        prog="riverbeam trace",
        description="Print a run's spans as a tree with timings, from the traces `riverbeam dev --traces` "
        "keeps in the data dir, with the runs linked to it across a person's approval and the wait between "
        "them.",
    )
    found.add_argument("run_id", metavar="RUN_ID", help="the run's id (a Result's run_id)")
    found.add_argument(
        "--data-dir", type=Path, default=DEFAULT_DATA_DIR, help="the stack's data dir (default: %(default)s)"
    )
    return found


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    path = args.data_dir.expanduser() / TRACES_FILE
    if not path.is_file():
        print(f"riverbeam trace: no traces in {path}: start `riverbeam dev --traces`", file=sys.stderr)
        return 1
    spans = list(read_spans(path))
    runs = linked_runs(spans, args.run_id)
    if not runs:
        print(f"riverbeam trace: no run {visible(args.run_id)} in {path}", file=sys.stderr)
        return 1
    for line in render(spans, runs):
        print(line)
    return 0

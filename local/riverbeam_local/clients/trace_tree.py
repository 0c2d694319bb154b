"""`riverbeam trace RUN_ID`: a run's spans, from the OTLP JSON lines `riverbeam dev --traces` keeps, as a
tree with timings. A run that asked a person and the run that resumed are two traces joined by a span link
(no span stays open while a person decides): the runs linked to RUN_ID, before and after it, are printed in
order, and the wait between them as the gap from the asking run's end to the resuming run's start."""

from __future__ import annotations

import argparse
import errno
import json
import os
import stat
import sys
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..display import visible
from ..stack_secret import DEFAULT_DATA_DIR
from .trace_render import RUN_ID, Printed, render, unique_spans

TRACES_FILE = Path("traces") / "spans.jsonl"
SESSION_ID = "gen_ai.conversation.id"
# a run or session id is a UUID; a prefix of its canonical form names it from this many hex digits on
UUID_SHAPE = "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"
MIN_PREFIX = 8
HEX = frozenset("0123456789abcdef")
# how much of a given id an error message repeats
MAX_SHOWN = 64
# how many runs a story follows through its links at most (an interaction answered in many parts)
MAX_RUNS = 200
# how many duplicated or cyclic span ids a note names (the rest counted)
MAX_TOLD = 10


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

    @property
    def run_id(self) -> str:
        return str(self.attributes.get(RUN_ID, "")).lower()

    @property
    def session_id(self) -> str:
        return str(self.attributes.get(SESSION_ID, "")).lower()


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


def _text(value: Any) -> str:
    """An id or a name, which the tree looks up and prints: a string, or the line is not read."""
    if not isinstance(value, str):
        raise TypeError("not a string")
    return value


def _span(encoded: dict[str, Any]) -> SpanRecord:
    status = encoded.get("status") or {}
    return SpanRecord(
        trace_id=_text(encoded["traceId"]),
        span_id=_text(encoded["spanId"]),
        parent_id=_text(encoded["parentSpanId"]) if encoded.get("parentSpanId") else None,
        name=_text(encoded["name"]),
        start_ns=int(encoded["startTimeUnixNano"]),
        end_ns=int(encoded["endTimeUnixNano"]),
        attributes=_attributes(encoded.get("attributes")),
        links=[
            (_text(k["traceId"]), _text(k["spanId"]), _attributes(k.get("attributes")))
            for k in encoded.get("links", [])
        ],
        events=[(e["name"], _attributes(e.get("attributes"))) for e in encoded.get("events", [])],
        error=(status.get("message") or "error") if status.get("code") == 2 else None,
    )


@dataclass
class Traces:
    """What the traces file holds: its spans, and how many of its lines were not readable as an export
    request (cut short by a crash, or damaged)."""

    spans: list[SpanRecord]
    skipped: int = 0

    @property
    def runs(self) -> list[SpanRecord]:
        return [s for s in self.spans if s.is_run]


def _export_request(line: bytes) -> list[SpanRecord]:
    """The spans of one line; ValueError (UnicodeDecodeError among them), KeyError, TypeError,
    AttributeError or RecursionError where it is not an export request."""
    request = json.loads(line.decode("utf-8"))
    return [
        _span(s)
        for resource in request["resourceSpans"]
        for scope in resource["scopeSpans"]
        for s in scope["spans"]
    ]


def read_traces(path: Path) -> Traces:
    """Every span of the file; a line that is not an export request is skipped and counted (OSError
    where the file cannot be read)."""
    traces = Traces([])
    with path.open("rb") as lines:
        for line in lines:
            try:
                traces.spans.extend(_export_request(line))
            except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
                traces.skipped += 1 if line.strip() else 0
    return traces


def _story(runs: list[SpanRecord], start: list[SpanRecord]) -> list[SpanRecord]:
    """`start` and the runs linked to it, directly or through others, oldest first."""
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


def linked_runs(spans: list[SpanRecord], run_id: str) -> list[SpanRecord]:
    """The run's span and the runs linked to it, directly or through others, oldest first ([]: not found)."""
    runs = [s for s in spans if s.is_run]
    return _story(runs, [s for s in runs if s.run_id == run_id.lower()])


def _told(ids: list[str], what: str) -> str:
    shown_ids = ", ".join(shown(i) for i in ids[:MAX_TOLD])
    more = f" and {len(ids) - MAX_TOLD} more" if len(ids) > MAX_TOLD else ""
    count = f"{len(ids)} span id{'s' if len(ids) != 1 else ''}"
    return f"riverbeam trace: {count} {what}: {shown_ids}{more}"


class TraceError(Exception):
    """Why nothing is printed, in one line for stderr; `code` is the exit status."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def shown(given: str) -> str:
    """A given id as an error repeats it: escaped, and cut short."""
    return visible(given if len(given) <= MAX_SHOWN else f"{given[:MAX_SHOWN]}...")


def normalized_id(given: str) -> str | None:
    """`given` as the spans spell ids (lowercase, dashed), or a prefix of that with at least MIN_PREFIX
    hex digits; None when it is neither."""
    text = given.strip().lower()
    try:
        return str(uuid.UUID(text))
    except ValueError:
        pass
    if len(text) > len(UUID_SHAPE) or sum(c in HEX for c in text) < MIN_PREFIX:
        return None
    fits = all(c == "-" if slot == "-" else c in HEX for c, slot in zip(text, UUID_SHAPE, strict=False))
    return text if fits else None


@dataclass
class Selection:
    """The runs to print, oldest first, and the session's id where a session was asked for."""

    runs: list[SpanRecord]
    session_id: str | None = None


def _matching(runs: list[SpanRecord], wanted: str) -> tuple[set[str], set[str]]:
    """The run ids and the session ids that `wanted` (a full id, or a prefix of one) names."""
    full = len(wanted) == len(UUID_SHAPE)

    def matches(found: str) -> bool:
        return found == wanted if full else found.startswith(wanted)

    run_ids = {s.run_id for s in runs if matches(s.run_id)}
    return run_ids, {s.session_id for s in runs if matches(s.session_id)} - run_ids


def select(traces: Traces, given: str | None, path: Path) -> Selection:
    """The latest run's story (no id), a run's story, or a session's runs; TraceError where the id is not
    one, or names no run or session of `path`, or several."""
    runs = traces.runs
    if given is None:
        if not runs:
            raise TraceError(f"no runs in {path}")
        return Selection(_story(runs, [max(runs, key=lambda s: s.start_ns)]))
    wanted = normalized_id(given)
    if wanted is None:
        problem = "an empty id" if not given.strip() else f"{shown(given)} is not a run or session id"
        raise TraceError(f"{problem}: give a UUID, or its first {MIN_PREFIX} hex digits or more", code=2)
    run_ids, session_ids = _matching(runs, wanted)
    if len(run_ids) + len(session_ids) > 1:
        count = len(run_ids) + len(session_ids)
        raise TraceError(f"{shown(given)} matches {count} run and session ids in {path}: give more of it")
    if run_ids:
        return Selection(linked_runs(runs, run_ids.pop()))
    if session_ids:
        session = session_ids.pop()
        return Selection(
            sorted((s for s in runs if s.session_id == session), key=lambda s: s.start_ns), session
        )
    raise TraceError(f"no run or session {shown(given)} in {path}")


def parser() -> argparse.ArgumentParser:
    found = argparse.ArgumentParser(
        prog="riverbeam trace",
        description="Print a run's spans as a tree with timings, from the traces `riverbeam dev --traces` "
        "keeps in the data dir, with the runs linked to it across a person's approval and the wait between "
        "them; or every run of a session.",
    )
    found.add_argument(
        "id",
        metavar="ID",
        nargs="?",
        help="a run id (a Result's run_id) or a session id (the chat's `session` line), in any case, or its "
        f"first {MIN_PREFIX} hex digits or more (default: the latest run)",
    )
    found.add_argument(
        "--data-dir", type=Path, default=DEFAULT_DATA_DIR, help="the stack's data dir (default: %(default)s)"
    )
    return found


def _read(path: Path) -> Traces:
    """The traces file's spans; TraceError where there is none or it cannot be read."""
    try:
        info = path.stat()  # a directory, a FIFO or a symbolic link's loop is told before it is opened
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR))
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        return read_traces(path)
    except FileNotFoundError:
        raise TraceError(f"no traces in {path}: start `riverbeam dev --traces`") from None
    except OSError as error:
        raise TraceError(f"{path} cannot be read: {error.strerror or error}") from None


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    path = args.data_dir.expanduser() / TRACES_FILE
    traces: Traces | None = None
    try:
        traces = _read(path)
        selection = select(traces, args.id, path)
    except TraceError as error:
        print(f"riverbeam trace: {error}", file=sys.stderr)
        if traces is not None and traces.skipped:
            print(
                f"riverbeam trace: {traces.skipped} lines of it were skipped (not OTLP JSON: cut short or "
                "damaged)",
                file=sys.stderr,
            )
        return error.code
    if selection.session_id is not None:
        print(visible(f"session {selection.session_id}: {len(selection.runs)} runs"))
    printed = Printed()
    for line in render(traces.spans, selection.runs, printed):
        print(line)
    duplicated = unique_spans(traces.spans)[1]
    if duplicated:
        print(_told(duplicated, "came more than once (the first printed)"), file=sys.stderr)
    if printed.cyclic:
        cyclic = list(dict.fromkeys(printed.cyclic))
        print(_told(cyclic, "are their own ancestors (cycles, followed once)"), file=sys.stderr)
    return 0

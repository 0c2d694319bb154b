"""How `riverbeam trace` draws a run's spans: a tree with timings, each span once (a span that is its own
ancestor, or an id that came twice, cannot make it loop), and a person's wait between linked runs."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..display import visible

if TYPE_CHECKING:
    from .trace_tree import SpanRecord

RUN_ID = "riverbeam.run.id"


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
        notes.append(f"run {a.get(RUN_ID)} ({a.get('riverbeam.run.kind')})")
        if a.get("riverbeam.run.status"):
            notes.append(str(a["riverbeam.run.status"]))
    tokens = [a.get("gen_ai.usage.input_tokens"), a.get("gen_ai.usage.output_tokens")]
    if any(tokens):
        notes.append(f"tokens {tokens[0] or 0} in, {tokens[1] or 0} out")
    if span.error:
        notes.append(f"error {span.error}")
    return visible(", ".join(notes))


def _line(span: SpanRecord, origin: int, depth: int) -> Iterator[str]:
    offset, took = duration(span.start_ns - origin), duration(span.end_ns - span.start_ns)
    yield f"{'  ' * depth}{visible(span.name)}  +{offset}  {took}  {_notes(span)}".rstrip()
    for name, attributes in span.events:
        if name == "riverbeam.approval.requested":
            yield visible(
                f"{'  ' * (depth + 1)}asks a person: {attributes.get('gen_ai.tool.name')} "
                f"action {attributes.get('riverbeam.action.id')}"
            )


@dataclass
class Printed:
    """The span ids printed so far, and those met again as their own ancestor (a cycle)."""

    seen: set[str] = field(default_factory=set)
    cyclic: list[str] = field(default_factory=list)


def _tree(
    root: SpanRecord, children: dict[str, list[SpanRecord]], origin: int, printed: Printed
) -> Iterator[str]:
    """`root` and its descendants, each span once: walked with a stack (a parent chain as long as the file
    costs no recursion), a span met again (its own parent, a cycle) told, not followed."""
    stack = [(root, 0)]
    while stack:
        span, depth = stack.pop()
        if span.span_id in printed.seen:
            printed.cyclic.append(span.span_id)
            yield visible(f"{'  ' * depth}(span {span.span_id} {span.name} again: a cycle, not followed)")
            continue
        printed.seen.add(span.span_id)
        yield from _line(span, origin, depth)
        below = sorted(children.get(span.span_id, []), key=lambda s: s.start_ns)
        stack.extend((child, depth + 1) for child in reversed(below))


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


def unique_spans(spans: list[SpanRecord]) -> tuple[list[SpanRecord], list[str]]:
    """Each span id once (its first span in the file), and the ids that came more than once."""
    first: dict[str, SpanRecord] = {}
    duplicated: dict[str, None] = {}
    for span in spans:
        if span.span_id in first:
            duplicated[span.span_id] = None
        else:
            first[span.span_id] = span
    return list(first.values()), list(duplicated)


def render(spans: list[SpanRecord], runs: list[SpanRecord], printed: Printed | None = None) -> list[str]:
    """The runs' trees, each span printed once; `printed` tells which were met again (cycles)."""
    printed = printed if printed is not None else Printed()
    children: dict[str, list[SpanRecord]] = {}
    for span in unique_spans(spans)[0]:
        if span.parent_id is not None:
            children.setdefault(span.parent_id, []).append(span)
    origin = runs[0].start_ns
    lines: list[str] = []
    earlier: dict[str, SpanRecord] = {}
    for run in runs:
        lines.extend(_wait(run, earlier))
        lines.extend(_tree(run, children, origin, printed))
        earlier[run.span_id] = run
    return lines

"""The spans a test made, through OpenTelemetry's SDK and its in-memory exporter. A process has one tracer
provider (OpenTelemetry sets it once), so it is set by the first test that asks and shared; each test
starts with no spans recorded."""

from __future__ import annotations

import functools
from collections.abc import Iterator

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


class OpenSpans(SpanProcessor):
    """The spans started and not ended yet."""

    def __init__(self) -> None:
        self.started: dict[int, str] = {}

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        self.started[span.context.span_id] = span.name

    def on_end(self, span: ReadableSpan) -> None:
        assert span.context is not None
        self.started.pop(span.context.span_id, None)


@functools.cache
def _provider() -> tuple[InMemorySpanExporter, OpenSpans]:
    """The process's in-memory exporter and open-span tracker, behind the tracer provider it sets."""
    memory, open_spans = InMemorySpanExporter(), OpenSpans()
    provider = TracerProvider()
    provider.add_span_processor(open_spans)
    provider.add_span_processor(SimpleSpanProcessor(memory))
    trace.set_tracer_provider(provider)
    return memory, open_spans


class Recorded:
    """The spans ended since the test began (a span is exported when it ends), and those still open."""

    def __init__(self, memory: InMemorySpanExporter, open_spans: OpenSpans) -> None:
        self._memory = memory
        self._open = open_spans

    def clear(self) -> None:
        """Forget the spans ended so far (a test's next part starts with none)."""
        self._memory.clear()

    def still_open(self) -> list[str]:
        return sorted(self._open.started.values())

    def spans(self) -> list[ReadableSpan]:
        return list(self._memory.get_finished_spans())

    def named(self, name: str) -> list[ReadableSpan]:
        return [s for s in self.spans() if s.name == name]

    def one(self, name: str) -> ReadableSpan:
        found = self.named(name)
        assert len(found) == 1, f"{len(found)} spans named {name!r}: {[s.name for s in self.spans()]}"
        return found[0]


def recording() -> Iterator[Recorded]:
    """A test's spans: a fixture's body (`yield from recording()`)."""
    memory, open_spans = _provider()
    memory.clear()
    open_spans.started.clear()
    yield Recorded(memory, open_spans)
    memory.clear()

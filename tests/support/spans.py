"""The spans a test made, through OpenTelemetry's SDK and its in-memory exporter. OpenTelemetry sets its
global tracer provider once per process; a test that records spans sets it for its own time and resets
it after (as OpenTelemetry's own test utilities do), so every other test runs untraced, as a deployment
without an exporter does."""

from __future__ import annotations

from collections.abc import Iterator

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.util._once import Once
from riverbeam.telemetry import spans


class OpenSpans(SpanProcessor):
    """The spans started and not ended yet."""

    def __init__(self) -> None:
        self.started: dict[int, str] = {}

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        self.started[span.context.span_id] = span.name

    def on_end(self, span: ReadableSpan) -> None:
        assert span.context is not None
        self.started.pop(span.context.span_id, None)


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


def _reset_global_provider() -> None:
    """No tracer provider, as in a fresh process (and riverbeam's cached tracer forgotten)."""
    trace._TRACER_PROVIDER_SET_ONCE = Once()
    trace._TRACER_PROVIDER = None
    spans.tracer.cache_clear()


def recording() -> Iterator[Recorded]:
    """A test's spans: a fixture's body (`yield from recording()`)."""
    memory, open_spans = InMemorySpanExporter(), OpenSpans()
    provider = TracerProvider()
    provider.add_span_processor(open_spans)
    provider.add_span_processor(SimpleSpanProcessor(memory))
    _reset_global_provider()
    trace.set_tracer_provider(provider)
    try:
        yield Recorded(memory, open_spans)
    finally:
        _reset_global_provider()
        provider.shutdown()

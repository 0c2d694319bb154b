"""The trace context that crosses a wait or a queue, as W3C Trace Context (`traceparent`): the asking
span's, stored on each Action it asks for, becomes a span link of the run that resumes the action; a
request's, carried by its queue message, becomes the parent of the run the worker makes of it.

OpenTelemetry's `propagate` module is not used: it loads the propagators named by OTEL_PROPAGATORS through
entry points, some milliseconds of a cold start; W3C Trace Context is what an Action stores either way."""

from __future__ import annotations

from collections.abc import Mapping

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Link
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
from opentelemetry.util.types import AttributeValue

from .carriers import TRACEPARENT

_W3C = TraceContextTextMapPropagator()


def current_carrier() -> dict[str, str]:
    """The current span's context as W3C headers (`traceparent`, and `tracestate` where it has one);
    empty where no span is current (no tracer provider, or outside every span)."""
    carrier: dict[str, str] = {}
    _W3C.inject(carrier)
    return carrier


def current_traceparent() -> str | None:
    """The current span's `traceparent`, or None where no span is current."""
    return current_carrier().get(TRACEPARENT)


def context_from(carrier: Mapping[str, str]) -> Context | None:
    """The remote context a carrier holds, to parent a span with; None where it holds no valid one."""
    context = _W3C.extract(dict(carrier))
    return context if trace.get_current_span(context).get_span_context().is_valid else None


def link_to(traceparent: str | None, attributes: Mapping[str, AttributeValue] | None = None) -> Link | None:
    """A span link to the span a stored `traceparent` names; None where there is none or it is not a
    valid one (an Action stored before trace contexts were kept, or without a tracer)."""
    if not traceparent:
        return None
    context = _W3C.extract({TRACEPARENT: traceparent})
    span_context = trace.get_current_span(context).get_span_context()
    if not span_context.is_valid:
        return None
    return Link(span_context, dict(attributes or {}))

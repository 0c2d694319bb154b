"""Trace context on a queue message and an event, without importing OpenTelemetry where no span can be
current: a function that runs no agent (an API handler that checks and queues) never imports it, and so has
no span of Riverbeam's to pass on, unless something else (ADOT's instrumentation) imported the API first.
So a handler's cold start pays for OpenTelemetry only where it is used."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

TRACEPARENT = "traceparent"
TRACESTATE = "tracestate"
# the modules that are imported once any span can be current
_API = "opentelemetry.trace"


def outgoing() -> dict[str, str]:
    """The current span's W3C headers to send on (empty where there is no current span)."""
    if _API not in sys.modules:
        return {}
    from .trace_context import current_carrier

    return current_carrier()


def sqs_attributes(headers: Mapping[str, str]) -> dict[str, Any]:
    """W3C headers as SQS message attributes (String), as `send_message`'s MessageAttributes takes them."""
    return {name: {"DataType": "String", "StringValue": value} for name, value in headers.items()}


def from_sqs_record(record: Mapping[str, Any]) -> dict[str, str]:
    """The W3C headers an SQS record (Lambda's event shape) carries in its message attributes."""
    found: dict[str, str] = {}
    attributes = record.get("messageAttributes") or {}
    for name in (TRACEPARENT, TRACESTATE):
        value = (attributes.get(name) or {}).get("stringValue")
        if isinstance(value, str) and value:
            found[name] = value
    return found


@contextmanager
def continued(headers: Mapping[str, str]) -> Iterator[None]:
    """The block runs in the remote context `headers` carry (the spans it starts are its children); with
    no headers, or none valid, in the current one, and without importing OpenTelemetry for it."""
    if not headers.get(TRACEPARENT):
        yield
        return
    from opentelemetry import context

    from .trace_context import context_from

    remote = context_from(headers)
    if remote is None:
        yield
        return
    token = context.attach(remote)
    try:
        yield
    finally:
        context.detach(token)

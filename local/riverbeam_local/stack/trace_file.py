"""`riverbeam dev --traces`: the handlers' spans kept under the data dir as OTLP JSON, one
`{"resourceSpans": [...]}` export request per line (OpenTelemetry's JSON encoding of OTLP: hex ids, times
in nanoseconds as strings, enums as numbers), so any OTLP tool can read them and `riverbeam trace` prints
a run's tree from them. OpenTelemetry's SDK has no file exporter of its own; this one writes each span as
it ends (a span seen in the file is complete), which costs the local stack a line's write per span.

The spans may hold tool args and results (RIVERBEAM_CAPTURE_ARGS), so the directory is made 0700 and the
file 0600, as the stack's secret is: readable by their owner alone from the moment they exist."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

from ..clients.trace_tree import TRACES_FILE

SERVICE_NAME = "riverbeam-dev"
DIRECTORY_MODE = 0o700
FILE_MODE = 0o600


def open_private(path: Path) -> IO[str]:
    """`path` opened to append, its directory and itself readable by their owner alone: created with those
    modes (never readable by others for a moment), and set to them where an earlier run left them looser."""
    path.parent.mkdir(mode=DIRECTORY_MODE, parents=True, exist_ok=True)
    os.chmod(path.parent, DIRECTORY_MODE)
    descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, FILE_MODE)
    try:
        os.fchmod(descriptor, FILE_MODE)
        return os.fdopen(descriptor, "a", encoding="utf-8")
    except BaseException:
        os.close(descriptor)
        raise


def any_value(value: Any) -> dict[str, Any]:
    """An attribute's value as OTLP's AnyValue."""
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, list | tuple):
        return {"arrayValue": {"values": [any_value(v) for v in value]}}
    return {"stringValue": str(value)}


def key_values(attributes: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    return [{"key": key, "value": any_value(value)} for key, value in (attributes or {}).items()]


def _hex_ids(context: trace.SpanContext) -> dict[str, str]:
    return {"traceId": f"{context.trace_id:032x}", "spanId": f"{context.span_id:016x}"}


def encode_span(span: ReadableSpan) -> dict[str, Any]:
    """One span as OTLP JSON (kinds and status codes as OTLP numbers them: the SDK's plus one, and as is)."""
    assert span.context is not None
    encoded: dict[str, Any] = {
        **_hex_ids(span.context),
        "name": span.name,
        "kind": span.kind.value + 1,
        "startTimeUnixNano": str(span.start_time or 0),
        "endTimeUnixNano": str(span.end_time or 0),
        "attributes": key_values(span.attributes),
        "events": [
            {"timeUnixNano": str(e.timestamp), "name": e.name, "attributes": key_values(e.attributes)}
            for e in span.events
        ],
        "links": [
            {**_hex_ids(link.context), "attributes": key_values(link.attributes)} for link in span.links
        ],
        "status": {"code": span.status.status_code.value, "message": span.status.description or ""},
    }
    if span.parent is not None:
        encoded["parentSpanId"] = f"{span.parent.span_id:016x}"
    return encoded


def encode(spans: Sequence[ReadableSpan]) -> dict[str, Any]:
    """An OTLP export request: the spans grouped by resource, then by instrumentation scope."""
    by_resource: dict[int, tuple[Resource, dict[tuple[str, str], list[dict[str, Any]]]]] = {}
    for span in spans:
        _, scopes = by_resource.setdefault(id(span.resource), (span.resource, {}))
        scope = span.instrumentation_scope
        key = (scope.name, scope.version or "") if scope is not None else ("", "")
        scopes.setdefault(key, []).append(encode_span(span))
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": key_values(resource.attributes)},
                "scopeSpans": [
                    {"scope": {"name": name, "version": version}, "spans": encoded}
                    for (name, version), encoded in scopes.items()
                ],
            }
            for resource, scopes in by_resource.values()
        ]
    }


class OtlpJsonLinesExporter(SpanExporter):
    """Appends each export to a file, one JSON line each, flushed at once."""

    def __init__(self, path: Path) -> None:
        self._file: IO[str] | None = open_private(path)
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        line = json.dumps(encode(spans), separators=(",", ":"), ensure_ascii=False)
        with self._lock:
            if self._file is None:
                return SpanExportResult.FAILURE
            self._file.write(line + "\n")
            self._file.flush()
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def keep_traces(data_dir: Path) -> TracerProvider:
    """Make the process's tracer provider write every span to the data dir's traces file; the caller
    shuts it down when the stack stops. OSError where the file cannot be made or opened."""
    data_dir.mkdir(mode=DIRECTORY_MODE, parents=True, exist_ok=True)  # as the stack makes it
    provider = TracerProvider(resource=Resource.create({"service.name": SERVICE_NAME}))
    provider.add_span_processor(SimpleSpanProcessor(OtlpJsonLinesExporter(data_dir / TRACES_FILE)))
    trace.set_tracer_provider(provider)
    return provider

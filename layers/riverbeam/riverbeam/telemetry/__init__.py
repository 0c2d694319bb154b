"""Telemetry: spans in OpenTelemetry's GenAI conventions (`spans`), the trace context an Action keeps
across a person's wait and a queue message carries (`trace_context`, `carriers`), and the attribute names
(`attributes`). Only `opentelemetry-api` is used: what exports the spans is the deployment's. Nothing is
imported here, so importing a submodule that needs no OpenTelemetry (`carriers`, `attributes`) costs none."""

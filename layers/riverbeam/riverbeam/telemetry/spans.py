"""Spans in OpenTelemetry's GenAI conventions: `invoke_agent <agent>` per run, `chat <model>` per model
call, `execute_tool <tool>` per tool call, with Riverbeam's `riverbeam.*` attributes. Each helper is a
context manager that ends its span when the block ends, errors included (the error recorded on it), so no
span outlives the call it describes: none stays open while a person decides.

Only `opentelemetry-api`: without a tracer provider (none set up) every span is a no-op that costs a few
microseconds; the deployment decides what exports them (ADOT in Lambda, a file or nothing locally)."""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any

from opentelemetry import trace
from opentelemetry.trace import Link, Span, SpanKind, StatusCode

from . import attributes as attr

if TYPE_CHECKING:
    from opentelemetry.context import Context

INSTRUMENTATION = "riverbeam"
# what a span helper gives where no tracer provider is set: no span is made, no context is changed
UNTRACED: AbstractContextManager[Span] = nullcontext(trace.INVALID_SPAN)


@functools.cache
def tracer() -> trace.Tracer:
    """The library's tracer. Made once: before a provider is set it is a proxy that follows the provider
    set later (a test's, ADOT's)."""
    return trace.get_tracer(INSTRUMENTATION)


def traced() -> bool:
    """Whether a tracer provider is set (an SDK's, ADOT's). Without one the API's spans are no-ops that
    still cost a few context switches each: the helpers skip them (bench/tracing.py)."""
    return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


def _current(
    name: str,
    kind: SpanKind,
    attributes: Mapping[str, Any],
    links: Sequence[Link] = (),
    parent: Context | None = None,
) -> AbstractContextManager[Span]:
    """A span started now, current in the block, ended by it (an exception raised through it recorded)."""
    span = tracer().start_span(name, context=parent, kind=kind, attributes=attributes, links=links)
    return trace.use_span(span, end_on_exit=True, record_exception=True, set_status_on_exception=True)


def _present(values: Mapping[str, Any]) -> dict[str, Any]:
    """The attributes that have a value (OpenTelemetry refuses None)."""
    return {key: value for key, value in values.items() if value is not None}


def agent_span(
    *,
    agent_name: str,
    session_id: str,
    interaction_id: str,
    run_id: str,
    kind: str,
    agent_id: str | None = None,
    links: Sequence[Link] = (),
    parent: Context | None = None,
) -> AbstractContextManager[Span]:
    """`invoke_agent <agent>`: one run, as the current span of the block. `links` point at the runs that
    asked for the actions this one resumes; `parent` is a context carried by a queue message, where the
    run continues a request's trace."""
    if not traced():
        return UNTRACED
    attributes = _present(
        {
            attr.OPERATION: attr.INVOKE_AGENT,
            attr.AGENT_NAME: agent_name,
            attr.AGENT_ID: agent_id,
            attr.CONVERSATION_ID: session_id,
            attr.INTERACTION_ID: interaction_id,
            attr.RUN_ID: run_id,
            attr.RUN_KIND: kind,
        }
    )
    return _current(f"{attr.INVOKE_AGENT} {agent_name}", SpanKind.INTERNAL, attributes, links, parent)


def chat_span(*, model: str, provider: str) -> AbstractContextManager[Span]:
    """`chat <model>`: one model call (a turn), as the current span of the block."""
    if not traced():
        return UNTRACED
    attributes = {attr.OPERATION: attr.CHAT, attr.REQUEST_MODEL: model, attr.PROVIDER: provider}
    return _current(f"{attr.CHAT} {model}", SpanKind.CLIENT, attributes)


def tool_span(
    *,
    tool: str,
    call_id: str,
    args: Mapping[str, Any],
    decision: str,
    action_id: str | None = None,
    args_sha256: str | None = None,
    decided_by: str | None = None,
) -> AbstractContextManager[Span]:
    """`execute_tool <tool>`: one tool call, as the current span of the block. `decision` is how it came
    to run (`allow`: nobody was asked; `ask`: a person approved it, `decided_by`); the args go on the span
    only where RIVERBEAM_CAPTURE_ARGS is `true`."""
    if not traced():
        return UNTRACED
    attributes = _present(
        {
            attr.OPERATION: attr.EXECUTE_TOOL,
            attr.TOOL_NAME: tool,
            attr.TOOL_TYPE: "function",
            attr.TOOL_CALL_ID: call_id,
            attr.DECISION: decision,
            attr.ACTION_ID: action_id,
            attr.ARGS_SHA256: args_sha256,
            attr.DECIDED_BY: decided_by,
            attr.TOOL_CALL_ARGUMENTS: captured(args) if attr.capture_args() else None,
        }
    )
    return _current(f"{attr.EXECUTE_TOOL} {tool}", SpanKind.INTERNAL, attributes)


def captured(value: Any) -> str:
    """A value as a span keeps it: JSON, cut to CAPTURE_LIMIT characters."""
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return text if len(text) <= attr.CAPTURE_LIMIT else text[: attr.CAPTURE_LIMIT - 1] + "…"


def tool_outcome(span: Span, *, status: str, output: Any = None, code: str | None = None) -> None:
    """A tool's outcome on its span: an error's code as `error.type` and the span's status; the output
    only where args are captured."""
    if status != "ok":
        span.set_attribute(attr.ERROR_TYPE, code or status)
        span.set_status(StatusCode.ERROR, code or status)
    if output is not None and attr.capture_args():
        span.set_attribute(attr.TOOL_CALL_RESULT, captured(output))


def usage(span: Span, tokens: Any) -> None:
    """Token usage (a `TokenUsage`, or None where the model counts none) on a chat or agent span."""
    if tokens is None:
        return
    for name, value in (
        (attr.INPUT_TOKENS, tokens.input_tokens),
        (attr.OUTPUT_TOKENS, tokens.output_tokens),
        (attr.CACHE_READ_TOKENS, tokens.cache_read_tokens),
        (attr.CACHE_WRITE_TOKENS, tokens.cache_write_tokens),
    ):
        if value:
            span.set_attribute(name, value)


def failed(span: Span, code: str, message: str = "") -> None:
    """A failure that is answered, not raised (a run closed `failed`): its code on the span."""
    span.set_attribute(attr.ERROR_TYPE, code)
    span.set_status(StatusCode.ERROR, f"{code}: {message}" if message else code)


def decided_by(by: Mapping[str, Any] | None) -> str | None:
    """Who decided a call unasked, as `riverbeam.decided_by` says it (`policy:<ids>`, `grant:<id>`), from
    a decision's `by()`; None where nobody did (the tool's own confirm_required decided)."""
    if not by:
        return None
    if by.get("kind") == "grant":
        return f"grant:{by.get('grant_id')}"
    ids = ",".join(str(i) for i in by.get("policy_ids") or ())
    return f"policy:{ids}" if ids else "policy"


def call_denied(*, tool: str, call_id: str, decided_by: str | None) -> None:
    """A call refused unasked (it never runs, so it has no `execute_tool` span), as an event of the run's
    span: `riverbeam.decision` `deny` and who decided."""
    if not traced():
        return
    trace.get_current_span().add_event(
        attr.CALL_DENIED,
        _present(
            {
                attr.TOOL_NAME: tool,
                attr.TOOL_CALL_ID: call_id,
                attr.DECISION: "deny",
                attr.DECIDED_BY: decided_by,
            }
        ),
    )


def approval_requested(
    span: Span, *, action_id: str, tool: str, args_sha256: str, expires_at: str | None = None
) -> None:
    """An action the run asks a person for, as an event of its span (the tool does not run in it)."""
    span.add_event(
        attr.APPROVAL_REQUESTED,
        _present(
            {
                attr.ACTION_ID: action_id,
                attr.TOOL_NAME: tool,
                attr.ARGS_SHA256: args_sha256,
                attr.DECISION: "ask",
                "riverbeam.expires_at": expires_at,
            }
        ),
    )

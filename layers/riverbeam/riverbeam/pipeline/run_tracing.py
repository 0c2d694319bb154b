"""A run's `invoke_agent` span (riverbeam.telemetry): opened around the run and its closing write, so the
actions the run asks for store its trace context, and ended when the run is closed. A resuming run is
another trace, linked to the span of each run that asked for an action it resumes (the link says who
answered, how and when): no span stays open while a person decides."""

from __future__ import annotations

from contextlib import AbstractContextManager

from beam_store import Action
from opentelemetry.trace import Link, Span

from ..models import AgentResult
from ..telemetry import attributes as attr
from ..telemetry import spans, trace_context
from .step import Step


def _link(action: Action) -> Link | None:
    """A link to the span of the run that asked for `action`, where that run was traced."""
    response = action.response
    if response is None:
        return None
    told = {
        attr.ACTION_ID: action.action_id,
        attr.TOOL_NAME: action.tool,
        attr.DECISION: "ask",
        attr.RESPONSE: response.status,
        attr.DECIDED_BY: response.who,
        attr.ASKED_AT: action.created_at,
        attr.DECIDED_AT: response.when,
    }
    return trace_context.link_to(action.traceparent, told)


def traced_run(step: Step) -> AbstractContextManager[Span]:
    """The run's span, current for the block and ended with it (an error raised through it recorded)."""
    links = [link for action in step.resolved if (link := _link(action)) is not None]
    return spans.agent_span(
        agent_name=step.run.agent_name,
        agent_id=step.run.agent_id,
        session_id=step.session.session_id,
        interaction_id=step.interaction.interaction_id,
        run_id=step.run.run_id,
        kind=step.kind,
        links=links,
    )


def told(span: Span, step: Step, final: AgentResult) -> None:
    """How the run ended, on its span: its status, its tokens, each action it asks a person for, and the
    code it failed with."""
    run = step.run
    span.set_attribute(attr.RUN_STATUS, run.status)
    span.set_attribute(attr.INTERRUPTED, run.status == "interrupted")
    spans.usage(span, final.usage)
    if run.status == "interrupted":
        for request in final.action_required:
            spans.approval_requested(
                span,
                action_id=request.action_id or "",
                tool=request.tool,
                args_sha256=request.args_sha256 or "",
                expires_at=request.expires_at,
            )
    if run.status == "failed" and run.error is not None:
        spans.failed(span, run.error.code, run.error.message)

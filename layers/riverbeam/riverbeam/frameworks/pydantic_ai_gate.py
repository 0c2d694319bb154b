"""The gate inside a Pydantic AI run: a capability (Pydantic AI's hooks) that puts every tool call through
Riverbeam's gate before it runs, whether or not the framework marks the tool (`requires_approval=True`).

A call the framework does not mark is decided in `wrap_tool_execute`, before its tool runs: `allow`
runs it, `ask` defers it (`ApprovalRequired`), `deny` and args that do not fit the schema fail it with
why (`ToolFailed`, the model is told). The calls the framework defers itself (a tool marked
`requires_approval=True`, or one raising `ApprovalRequired` as it runs) reach `handle_deferred_tool_calls`
and are decided there as marked: `allow` answers `ToolApproved()` (the tool runs now), `deny`
`ToolDenied(why)`, `ask` leaves it unanswered. A run with calls asked ends on the framework's own
`DeferredToolRequests`. A call a person approved (the resume's `DeferredToolResults`) runs only with the
args the approval names (BEM-084 otherwise). Args that fail even the framework's own validation are
refused as unfit (3.12) before the framework asks its model to retry."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from beam_store import ErrorInfo, ToolResultPart
from pydantic import ValidationError
from pydantic_ai import DeferredToolRequests, DeferredToolResults, RunContext, ToolApproved, ToolDenied
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import ApprovalRequired, CallDeferred, ToolFailed
from pydantic_core import to_jsonable_python

from .calls import GatedCalls, Verdict

if TYPE_CHECKING:
    from pydantic_ai.messages import ToolCallPart
    from pydantic_ai.tools import ToolDefinition

    from ..agent.registry import ResolvedAction

# a tool that raised (the framework tells the model through its retry): as the built-in tools say it
FAILED_CODE = "BEM-331"


def jsonable(value: Any) -> Any:
    """A tool's output as JSON (what cannot be serialised, as its str)."""
    return to_jsonable_python(value, serialize_unknown=True, bytes_mode="base64")


class StopBeforeModel(Exception):
    """A run that only runs the calls approved while others of their turn wait ends before its model."""


@dataclass
class RiverbeamGate(AbstractCapability[Any]):
    """`calls`: the run's calls; `approved`: the person's approvals this run resumes with, by the
    framework's call id; `asked_args`: each asked call's args as they were asked about."""

    calls: GatedCalls
    approved: dict[str, ResolvedAction] = field(default_factory=dict)
    asked_args: dict[str, dict[str, Any]] = field(default_factory=dict)
    # calls allowed to run in this run (by the gate, or a person's approval that fits)
    allowed: set[str] = field(default_factory=set)
    asked: set[str] = field(default_factory=set)
    # the tools the gate decides as marked by the framework just now (GatedCalls' `marked` reads it)
    asking: set[str] = field(default_factory=set)
    # what each call's tool message says, by the framework's call id (the session's messages)
    parts: dict[str, ToolResultPart] = field(default_factory=dict)
    # calls run in an earlier resume (others of their turn were waiting): their results, not run again
    ran: dict[str, ToolResultPart] = field(default_factory=dict)
    stop: bool = False  # stop the run before its model (StopBeforeModel)

    async def before_model_request(self, ctx: RunContext[Any], request_context: Any) -> Any:
        if self.stop:
            raise StopBeforeModel()
        return request_context

    def _admit(self, call: ToolCallPart) -> None:
        """Whether the call runs now (else ApprovalRequired, or ToolFailed telling the model why)."""
        call_id = call.tool_call_id
        if call_id in self.allowed:
            return
        answer = self.approved.get(call_id)
        if answer is None:  # a call the framework does not mark, first seen: decided now
            verdict = self.calls.propose(call_id, call.tool_name, call.args_as_dict())
            if verdict.effect == "ask":
                self.asked.add(call_id)
                raise ApprovalRequired()
            if verdict.refusal is not None:  # denied, or args that do not fit: the model is told why
                self.parts[call_id] = verdict.refusal
                raise ToolFailed(verdict.message)
            self.allowed.add(call_id)
            return
        # a person's approval: the framework's own args are those asked about (the history's call holds
        # the edited ones)
        framework = self.asked_args.get(call_id, {}) if answer.edited else call.args_as_dict()
        runs = self.calls.runs_with(answer, framework)
        if isinstance(runs, Verdict):
            assert runs.refusal is not None
            self.parts[call_id] = runs.refusal
            raise ToolFailed(runs.message)
        self.allowed.add(call_id)

    async def wrap_tool_execute(
        self,
        ctx: RunContext[Any],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: dict[str, Any],
        handler: Callable[[dict[str, Any]], Awaitable[Any]],
    ) -> Any:
        """Each call decided before its tool runs, and run in its `execute_tool` span."""
        from ..telemetry import spans  # imported by the first call that runs, as the built-in runner does

        call_id = call.tool_call_id
        earlier = self.ran.get(call_id)
        if earlier is not None:  # its tool ran in an earlier resume: the model gets that result
            if earlier.error is not None:
                raise ToolFailed(f"{earlier.error.code}: {earlier.error.message}")
            return earlier.output
        self._admit(call)
        answer = self.approved.get(call_id)
        with spans.tool_span(
            tool=call.tool_name,
            call_id=self.calls.action_id(call_id),
            args=call.args_as_dict(),
            decision="ask" if answer is not None else "allow",
            action_id=answer.action_id if answer is not None else None,
            args_sha256=answer.args_sha256 if answer is not None else None,
            decided_by=answer.decided_by if answer is not None else None,
        ) as span:
            try:
                result = await handler(args)
            except (ApprovalRequired, CallDeferred):  # the tool asks as it runs
                raise
            except Exception as error:  # the tool raised (or asked for a retry): its tool message says so
                failed = ErrorInfo(code=FAILED_CODE, message=f"{call.tool_name} failed: {error}"[:1000])
                self.parts[call_id] = self._ran(call, error=failed)
                spans.tool_outcome(span, status="error", code=FAILED_CODE)
                raise
            part = self.parts[call_id] = self._ran(call, output=jsonable(result))
            spans.tool_outcome(span, status="ok", output=part.output)
        return result

    async def on_tool_validate_error(
        self,
        ctx: RunContext[Any],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: Any,
        error: ValidationError | Any,
    ) -> Any:
        """Args the framework itself cannot validate: unfit, never asked about (the framework then asks its
        model to retry, as it would)."""
        if isinstance(error, ValidationError) and call.tool_call_id not in self.parts:
            verdict = self.calls.propose(call.tool_call_id, call.tool_name, call.args_as_dict())
            if verdict.refusal is not None:
                self.parts[call.tool_call_id] = verdict.refusal
        raise error

    async def handle_deferred_tool_calls(
        self, ctx: RunContext[Any], *, requests: DeferredToolRequests
    ) -> DeferredToolResults | None:
        """The calls the framework defers itself, proposed to the gate as calls it marks: a tool marked
        `requires_approval=True`, or one that raised `ApprovalRequired` as it ran (allowed before)."""
        answers: dict[str, bool | ToolApproved | ToolDenied] = {}
        for call in requests.approvals:
            call_id = call.tool_call_id
            if call_id in self.asked or call_id in self.approved:
                continue
            self.allowed.discard(call_id)
            self.asking.add(call.tool_name)
            try:
                verdict = self.calls.propose(call_id, call.tool_name, call.args_as_dict())
            finally:
                self.asking.discard(call.tool_name)
            if verdict.effect == "allow":
                self.allowed.add(call_id)
                answers[call_id] = ToolApproved()
            elif verdict.effect == "ask":
                self.asked.add(call_id)
            else:  # denied, or args that do not fit: the model is told why
                assert verdict.refusal is not None
                self.parts[call_id] = verdict.refusal
                answers[call_id] = ToolDenied(verdict.message)
        return DeferredToolResults(approvals=answers) if answers else None

    def _ran(self, call: ToolCallPart, output: Any = None, error: ErrorInfo | None = None) -> ToolResultPart:
        action_id = self.calls.action_id(call.tool_call_id)
        part = self.calls.ran(action_id, call.tool_name, output=output, error=error)
        answer = self.approved.get(call.tool_call_id)
        if answer is not None and answer.edited:  # the session's record says it ran with the edited args
            part.edited_args = dict(answer.args)
        return part

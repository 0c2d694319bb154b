"""Run the agent on an opened step and close it: the runner's result checked, its frames numbered and
kept, and the run closed whatever happens (a failed closing write falls back to a bare `failed` close),
so no run is left `running` by this process."""

from __future__ import annotations

import logging
import time
from collections.abc import MutableMapping
from datetime import datetime
from typing import Any

from beam_store import Action, Grant, new_id

from ..agent.registry import AgentInput, ResolvedAction, RunnerFailure
from ..args_limits import check_call_args
from ..errors import BeamError
from ..models import AgentResult, RunStartedFrame, StreamAck
from ..policy.gate import CallGate
from . import actions, call_counts, decisions, run_tracing, states, writes
from . import approval_events as events
from .checks import is_uuid
from .frames import FrameEmitter, FrameRecorder, FrameSink, closing_frames
from .grants import grantable_tools, may_grant
from .setup import Setup
from .step import Step
from .voting import tool_approvals

logger = logging.getLogger(__name__)
# codes a failed non-streamed invoke raises as they are (the model's own failures among them, and an MCP
# server's or a model's that cannot be reached: their messages are ours and name no internals); anything
# else is BEM-500
RAISABLE = {
    "BEM-002",
    "BEM-045",
    "BEM-046",
    "BEM-041",
    "BEM-503",
    *(f"BEM-34{n}" for n in range(9)),
    *(f"BEM-35{n}" for n in range(2, 10)),
}
# how long past the last of its actions' times a run's closing frames stay: the sweep comes within its
# schedule (a minute by default); a day covers a backlog of sweeps or an outage
EXPIRED_FRAME_MARGIN = 86400


class StepLog(logging.LoggerAdapter):  # type: ignore[type-arg]
    """The module's logger with the step's ids on every line (a line's own extra added)."""

    def process(self, msg: Any, kwargs: MutableMapping[str, Any]) -> tuple[Any, MutableMapping[str, Any]]:
        kwargs["extra"] = {**(self.extra or {}), **kwargs.get("extra", {})}
        return msg, kwargs


def as_failure(error: BaseException) -> BeamError:
    if isinstance(error, BeamError):
        return error
    logger.error("agent run failed", exc_info=error)
    return BeamError("BEM-500", "the agent failed")


def checked_result(result: object, *, finished: bool = True) -> AgentResult:
    """The runner's result validated afresh (its lists may have changed since it was built); refuses a
    result the store could not keep straight."""
    if not isinstance(result, AgentResult):
        raise TypeError(f"the runner returned {type(result).__name__}, not an AgentResult")
    result = AgentResult.model_validate(
        {name: getattr(result, name) for name in AgentResult.model_fields}, from_attributes=True
    )
    if not finished:
        return result
    if result.action_required:
        result.interrupted = True
    elif result.interrupted:
        raise ValueError("an interrupted result must name at least one action")
    given = [r.action_id for r in result.action_required if r.action_id is not None]
    if any(not is_uuid(i) for i in given) or len(set(given)) != len(given):
        raise ValueError(f"action ids must be distinct UUIDs, got {given}")
    for i, request in enumerate(result.action_required):
        # args nested too deep or too large fail the run with their code (BEM-045, BEM-046), not the store
        check_call_args(f"action_required.{i}.args", request.args)
        request.action_id = request.action_id or new_id()  # on this fresh copy: the runner's is left alone
    return result


def call_gate(setup: Setup, step: Step) -> CallGate:
    """What decides the run's tool calls: the agent's policy (if it has one), for the session's owner in
    the requester's groups; the session's grants read at each call that would ask (where it had any at the
    step's start), each checked against its tool's settings now."""
    agent, session_id = step.run.agent_name, step.session.session_id
    grantable = grantable_tools(step.runner)

    def read_grants() -> list[Grant]:
        # none at the step's start: nothing to revoke, and one made since would only spare a question, so
        # asking is the safe side and the session item is not read again
        if not step.session.grants:
            return []
        session = setup.store.get_session(session_id)
        return list(session.grants.values()) if session is not None else []

    def may_grant_now(tool: str) -> bool:
        return may_grant(tool, tool_approvals(setup, agent, step.runner, tool), grantable)

    return CallGate(
        setup.policies.get(agent),
        user_id=step.session.user_id,
        agent=agent,
        session_id=session_id,
        groups=step.groups,
        grants=list(step.session.grants.values()),
        read_grants=read_grants,
        grantable=may_grant_now,
        clock=setup.clock,
        timezone=setup.timezones.get(agent, "UTC"),
        ran_before=lambda: call_counts.ran_before(setup.store, session_id),
    )


def agent_input(step: Step, gate: CallGate | None = None, state: Any = None) -> AgentInput:
    actions = [
        ResolvedAction(
            action_id=a.action_id,
            status=a.response.status,
            tool=a.tool,
            args=a.run_args if a.run_args is not None else a.args,
            reason=a.response.reason,
            edited=a.response.edited_args is not None,
            requested_args=a.args if a.response.edited_args is not None else None,
            decided_by=a.response.who,
            args_sha256=a.run_args_sha256 or a.args_sha256,
        )
        for a in step.resolved
        if a.response is not None
    ]
    return AgentInput(
        agent_name=step.run.agent_name,
        session_id=step.session.session_id,
        interaction_id=step.interaction.interaction_id,
        run_id=step.run.run_id,
        user_id=step.session.user_id,
        profile_id=step.session.profile_id,
        content=step.content,
        history=step.history,
        actions=actions,
        gate=gate,
        state=state,
    )


def _stored_actions(setup: Setup, step: Step) -> set[str]:
    """The ids of the interaction's actions so far (one Query, on a resume only: an invoke's are new)."""
    if step.kind != "resume":
        return set()
    return {a.action_id for a in setup.store.list_actions(step.interaction.interaction_id)}


def _run_agent(
    setup: Setup, step: Step, emitter: FrameEmitter, log: StepLog
) -> tuple[AgentResult, BeamError | None]:
    """The runner's result, or what it did before it failed (its partial result) and the failure."""
    gate = call_gate(setup, step)
    try:
        state = states.read(setup.store, step.runner, step.interaction.interaction_id)
        input = agent_input(step, gate, state)
        result = checked_result(step.runner.run(input, emitter.emit))
        validates = callable(getattr(step.runner, "validate_args", None))
        if (gate.decides or validates) and not getattr(step.runner, "decides_calls", False):
            stored = _stored_actions(setup, step)
            result = decisions.decide_requests(step.runner, input, result, gate, emitter.emit, stored)
        return result, None
    except RunnerFailure as failed:
        failure = as_failure(failed.cause)
        try:
            return checked_result(failed.partial, finished=False), failure
        except Exception:
            log.exception("the runner's partial result is unusable")
            return AgentResult(), failure
    except BaseException as error:
        # SystemExit, KeyboardInterrupt, CancelledError out of another runner (its framework ran a tool that
        # raised it) fail the run too: closed `failed`, never left `running` for the lease
        return AgentResult(), as_failure(error)


def _kept_until(setup: Setup, recorder: FrameRecorder | None, result: AgentResult) -> int:
    """When the closing write's frames expire (epoch seconds): after their TTL, and never before the
    last of the run's actions expires plus EXPIRED_FRAME_MARGIN, whatever the agent's or tool's time:
    the sweep numbers its action_expired frame after the run's last kept frame (sweep.py), so `done`
    must still be there when the sweep comes (else the frame would be numbered 0, before `done`)."""
    if recorder is None:
        return 0
    times = [datetime.fromisoformat(r.expires_at) for r in result.action_required if r.expires_at]
    if not times:
        return recorder.expires_at()
    # the actions' times are by the setup's clock, the frames' by the wall's: the span between them counts
    left = (max(times) - setup.clock()).total_seconds()
    return max(recorder.expires_at(), int(time.time() + left) + EXPIRED_FRAME_MARGIN)


def _close(
    setup: Setup,
    step: Step,
    result: AgentResult,
    failure: BeamError | None,
    emitter: FrameEmitter,
    recorder: FrameRecorder | None,
    asked: list[Action],
    waiting: set[str],
) -> AgentResult:
    """The closing write, with the last frames and those not kept yet; the closing frames are sent once
    it is done (a run seen ended has all its frames). The actions it asks for are told as requested,
    but those `waiting` already (asked for by an earlier run)."""
    final = step.result(result)
    closing = emitter.stamp(closing_frames(final, failure))
    taken = recorder.take() if recorder is not None else []
    kept = taken + [f.model_dump(mode="json") for f in closing] if recorder is not None else []
    expires_at = _kept_until(setup, recorder, result)
    try:
        requested = writes.close(
            setup.store,
            step,
            result,
            failure,
            now=setup.now(),
            frames=kept,
            frames_expire_at=expires_at,
            asked=asked,
            waiting=waiting,
        )
    except Exception:
        if recorder is not None:  # not stored after all: written with the frames that follow
            recorder.put_back(taken)
        raise
    if recorder is not None:
        recorder.stored_through(closing[-1].frame_seq)
    events.deliver(setup.events, requested)
    emitter.send_stamped(closing)
    return final


def _close_bare(
    setup: Setup, step: Step, result: AgentResult, failure: BeamError, log: StepLog
) -> AgentResult | None:
    """Close it `failed` rather than leave it running: first keeping what the tools did, then bare; None
    where it could not be closed (another process closed it, or the store refuses)."""
    for fallback in (AgentResult(tool_outcomes=result.tool_outcomes), AgentResult()):
        try:
            writes.close(setup.store, step, fallback, failure, now=setup.now())
            return fallback
        except Exception:
            log.exception("the run could not be closed")
    return None


def _asked_again(setup: Setup, step: Step, result: AgentResult) -> tuple[dict[str, Action], set[str]]:
    """The interaction's stored actions that a resume's agent asks for again (a partial resume: the ones
    not answered yet): those still pending, as stored; and the ids of those no longer pending (the sweep,
    or a late resume's refusal, expired one while this run ran). One Query, only where a resume's run
    asks for actions."""
    if step.kind != "resume" or not result.action_required:
        return {}, set()
    asked = {r.action_id for r in result.action_required}
    listed = [a for a in setup.store.list_actions(step.interaction.interaction_id) if a.action_id in asked]
    return {a.action_id: a for a in listed if a.status == "pending"}, {
        a.action_id for a in listed if a.status != "pending"
    }


def _with_actions(
    setup: Setup, step: Step, result: AgentResult, waiting: dict[str, Action]
) -> tuple[AgentResult, list[Action]]:
    """The Actions the result asks for, built once (actions.py), and the result showing them."""
    asked = actions.asked(setup, step, result, waiting, setup.now())
    return result.model_copy(update={"action_required": actions.requests(asked)}), asked


def _without(result: AgentResult, gone: set[str], log: StepLog) -> AgentResult:
    """The result without the actions no longer pending: asked again, the open write would refuse them
    (the run failed BEM-500). An expired one is told to the agent by the interaction's next run."""
    if not gone:
        return result
    log.info("actions asked again are no longer pending", extra={"action_ids": sorted(gone)})
    rest = [r for r in result.action_required if r.action_id not in gone]
    return result.model_copy(update={"action_required": rest, "interrupted": bool(rest)})


def run_step(setup: Setup, step: Step, on_frame: FrameSink | None, *, record_frames: bool) -> AgentResult:
    """Run the agent and close the step, in the run's `invoke_agent` span (ended when this returns: none
    stays open while a person decides). A streamed run's frames are kept for late subscribers."""
    with run_tracing.traced_run(step) as span:
        final = _run_step(setup, step, on_frame, record_frames=record_frames)
        run_tracing.told(span, step, final)
        return final


def _run_step(setup: Setup, step: Step, on_frame: FrameSink | None, *, record_frames: bool) -> AgentResult:
    recorder = (
        FrameRecorder(
            setup.store, step.run.run_id, setup.frame_ttl_seconds, runs_tools_first=bool(step.resolved)
        )
        if record_frames
        else None
    )
    if recorder is not None:
        recorder.stored_through(step.frames_kept)
    sinks = [sink for sink in (recorder, on_frame) if sink is not None]
    emitter = FrameEmitter(step.run, sinks, setup.coalesce_seconds)
    emitter.emit(RunStartedFrame(agent_name=step.run.agent_name, kind=step.kind))
    log = StepLog(logger, step.ids())
    result, failure = _run_agent(setup, step, emitter, log)
    waiting, gone = _asked_again(setup, step, result)
    result, asked = _with_actions(setup, step, _without(result, gone, log), waiting)
    try:
        return _close(setup, step, result, failure, emitter, recorder, asked, set(waiting))
    except Exception as error:
        closing_failure = as_failure(error)
    # an action asked again that an expiry took after it was read loses the open write: read again, and
    # closed once more without it (the frames are numbered alike: they were not sent)
    _, gone = _asked_again(setup, step, result) if waiting else ({}, set())
    if gone:
        result = _without(result, gone, log)
        asked = [a for a in asked if a.action_id not in gone]
        try:
            return _close(setup, step, result, failure, emitter, recorder, asked, set(waiting) - gone)
        except Exception as error:
            closing_failure = as_failure(error)
    log.error("closing the run failed", extra={"code": closing_failure.code})
    failure = closing_failure
    closed = _close_bare(setup, step, result, failure, log)
    if closed is not None and recorder is not None:
        recorder.closed_here()
    final = step.result(closed or result)
    for frame in closing_frames(final, failure):
        emitter.emit(frame)
    return final


def answer_invoke(
    setup: Setup, step: Step, on_frame: FrameSink | None, *, stream: bool
) -> AgentResult | StreamAck:
    """An opened invoke run here: with `stream`, its StreamAck (the frames went to `on_frame`); else its
    Result, or the refusal it failed with."""
    result = run_step(setup, step, on_frame, record_frames=stream)
    if stream:
        return step.job().ack()
    error = step.run.error
    if step.run.status == "failed" and error is not None:
        raise BeamError(error.code if error.code in RAISABLE else "BEM-500", error.message)
    return result

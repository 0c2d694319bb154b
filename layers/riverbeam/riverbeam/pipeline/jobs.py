"""A step accepted earlier, run by a worker, once whatever the number of deliveries.

A worker's lease on a run, as `claim_run` takes it:

    accepted (running, unclaimed) --claim--> claimed by W until lease_expires_at --close--> ended
    a delivery that finds the run ...
      ended                 drops the job
      claimed, lease holds  BEM-042: delivered again later (W is still at it)
      claimed, lease lapsed W died: the run is closed `failed` (BEM-504) and the tools W may have run get
                            an unknown outcome (BEM-334), never a second run
"""

from __future__ import annotations

import logging
import uuid
from datetime import timedelta
from typing import Any

from beam_store import Action, Run, RunClaimed, RunNotRunning, new_id

from ..errors import BeamError
from ..models import AgentResult, InvokeRequest, RunJob
from . import accept, execute, intake, writes
from .frames import FrameEmitter, FrameSink, closing_frames
from .history import read as read_conversation
from .setup import Setup, iso
from .step import Step, interaction_ref

logger = logging.getLogger(__name__)
# a queue message's ids are derived from its message id, so a redelivery finds what the first delivery
# wrote instead of starting a second run
_QUEUE_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "riverbeam:queue")


def _derived_id(message_id: str, what: str) -> str:
    return str(uuid.uuid5(_QUEUE_NAMESPACE, f"{message_id}:{what}"))


def accept_queued_invoke(setup: Setup, body: Any, message_id: str) -> RunJob:
    """An invoke request a queue producer sent, accepted once: a redelivery of the message finds the run
    the first delivery opened (ended or not) and goes on with it."""
    request = intake.parse_request(InvokeRequest, body)
    run_id = _derived_id(message_id, "run")
    run = setup.store.get_run(run_id)
    if run is None:
        new_interaction_id = _derived_id(message_id, "interaction")
        return accept.open_invoke(setup, request, run_id=run_id, new_interaction_id=new_interaction_id).job()
    return RunJob(
        kind="invoke",
        agent_name=run.agent_name,
        session_id=run.session_id,
        interaction_id=run.interaction_id,
        run_id=run_id,
        content=list(request.content),
        groups=list(request.auth_context.groups),
    )


def _resolved_unrun(setup: Setup, job: RunJob, run: Run) -> list[Action]:
    """The job's actions this run resolved and nobody ran yet: a stale job cannot run a tool again."""
    found = (setup.store.get_action(i) for i in job.action_ids)
    return [a for a in found if a is not None and a.resolved_run_id == run.run_id and a.outcome is None]


def _claimed_step(setup: Setup, job: RunJob, run: Run) -> Step:
    runner = setup.runner(job.agent_name)
    session, history = read_conversation(setup.store, job.session_id, job.interaction_id, runner)
    if session is None:
        raise BeamError("BEM-020", f"session {job.session_id} not found", field="session_id")
    return Step(
        session=session,
        interaction=interaction_ref(
            job.interaction_id, job.session_id, job.agent_name, "in_progress", run.updated_at
        ),
        run=run,
        kind=job.kind,
        runner=runner,
        history=history,
        content=list(job.content),
        resolved=_resolved_unrun(setup, job, run),
        frames_kept=0 if job.kind == "resume" else -1,  # a resume's run_started: its opening write kept it
        groups=job.groups,
    )


def _claim(setup: Setup, job: RunJob, worker_id: str | None, lease_seconds: int) -> Run:
    lease = iso(setup.clock() + timedelta(seconds=lease_seconds))
    return setup.store.claim_run(job.run_id, worker_id or new_id(), lease, setup.now())


def run_job(
    setup: Setup, job: RunJob, worker_id: str | None, lease_seconds: int, on_frame: FrameSink | None
) -> AgentResult | None:
    """Claim the run, then run the agent (the module's comment draws what a delivery may find)."""
    try:
        run = _claim(setup, job, worker_id, lease_seconds)
    except RunNotRunning:
        logger.info("job of an ended run dropped", extra={"run_id": job.run_id})
        return None
    except RunClaimed as claimed:
        if (claimed.current.lease_expires_at or "") > setup.now():
            raise BeamError("BEM-042", f"run {job.run_id} is being run by another worker") from None
        lost = BeamError("BEM-504", "the worker running this step stopped before it ended")
        close_failed_job(setup, job, claimed.current, lost, tools_may_have_run=True, on_frame=on_frame)
        return None
    # the run is ours now: whatever goes wrong from here closes it, so it never stays running
    try:
        step = _claimed_step(setup, job, run)
    except Exception as error:
        failure = execute.as_failure(error)
        close_failed_job(setup, job, run, failure, tools_may_have_run=False, on_frame=on_frame)
        raise failure from None
    return execute.run_step(setup, step, on_frame, record_frames=True)


def abandon_job(setup: Setup, job: RunJob, failure: BeamError) -> None:
    """Close `failed` an accepted job that no worker will run (its queue refused it). Its resolved
    actions keep no outcome: their tools never run."""
    run = setup.store.get_run(job.run_id)
    if run is not None and run.status == "running":
        close_failed_job(setup, job, run, failure, tools_may_have_run=False)


def close_failed_job(
    setup: Setup,
    job: RunJob,
    run: Run,
    failure: BeamError,
    *,
    tools_may_have_run: bool,
    on_frame: FrameSink | None = None,
) -> None:
    """Close `failed` a run that cannot go on. Where its worker died, the tools it may have run get an
    unknown outcome: they are never run again. Its subscribers get `error` and `done`, numbered after
    the frames it kept."""
    now = setup.now()
    kept = setup.store.list_frames(run.run_id)
    sinks = [on_frame] if on_frame is not None else []
    emitter = FrameEmitter(run, sinks, first_seq=kept[-1]["frame_seq"] + 1 if kept else 0)
    ended = AgentResult(
        agent_name=run.agent_name,
        session_id=run.session_id,
        interaction_id=run.interaction_id,
        run_id=run.run_id,
    )
    closing = emitter.stamp(closing_frames(ended, failure))
    actions = [setup.store.get_action(i) for i in job.action_ids] if tools_may_have_run else []
    open_tools = [
        a
        for a in actions
        if a is not None and a.status == "resolved" and a.resolved_run_id == run.run_id and a.outcome is None
    ]
    session = setup.store.get_session(job.session_id)
    if session is None:
        raise BeamError("BEM-020", f"session {job.session_id} not found", field="session_id")
    interaction = interaction_ref(job.interaction_id, job.session_id, job.agent_name, "failed", now)
    frames = [f.model_dump(mode="json") for f in closing]
    opened = (session, interaction, run)
    writes.close_failed(
        setup.store,
        opened,
        failure,
        open_tools,
        now,
        frames=frames,
        frames_expire_at=setup.frames_expire_at(),
    )
    emitter.send_stamped(closing)
    logger.warning(
        "run closed failed",
        extra={"run_id": run.run_id, "code": failure.code, "unknown_tools": len(open_tools)},
    )

"""RiverBeam: the facade over the pipeline's stages. It holds the store, the agents and the settings;
each public method parses what it is given and hands it to one stage. A request meets them in order:

    intake.py         body -> request model, else BEM-001 / BEM-002
    retries.py        a request sent again with its request_id: the first answer (BEM-043, BEM-044)
    checks.py         the resume checks in the contract's order (pure), and the resolution
    accept.py         invoke and resume up to their opening write: an opened Step
    writes.py         the step writes (open, close, close failed); one store-conflict -> BEM mapping
    execute.py        run the agent on the opened step and close it, never leaving it running
    jobs.py           a step run by a worker: claim and lease, dead worker, abandon, a queued invoke
    frames.py         numbering, coalescing and keeping a run's frames
    reads.py          the owner's reads
    subscriptions.py  reserve a session, subscribe and forget a WebSocket connection
    expiry.py         actions past their time, expired lazily; sweep.py: the sweep of those nobody touched
    events.py         approval events (requested, decided, expired) for the event sink
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import BeamError
from ..models import AgentResult, AuthContext, InvokeRequest, ResumeRequest, RunJob, StreamAck, VoteAck

# accept, execute and jobs are imported by the methods that run them (the import budgets of each function:
# docs/benchmarks.md)
from . import reads, subscriptions
from .intake import parse_request
from .setup import (
    DEFAULT_COALESCE_SECONDS,
    DEFAULT_FRAME_TTL_SECONDS,
    DEFAULT_LEASE_SECONDS,
    DEFAULT_REQUEST_LEASE_SECONDS,
    DEFAULT_SWEEP_LIMIT,
    Clock,
    Setup,
    utc_clock,
)

if TYPE_CHECKING:
    from beam_store import Action, BeamStore, Grant, Interaction, Message, Run, Session
    from beam_store.approvers import ApprovalPage
    from beam_store.records import Approvals

    from ..agent.registry import AgentRunner
    from ..policy import Policy
    from .approval_events import EventSink
    from .frames import FrameSink
    from .pending import Waiting

    HandOff = Callable[[RunJob], None]


def _job(job: RunJob | dict[str, Any] | str) -> RunJob:
    return job if isinstance(job, RunJob) else parse_request(RunJob, job)


class RiverBeam:
    def __init__(
        self,
        store: BeamStore | None = None,
        *,
        frame_ttl_seconds: int = DEFAULT_FRAME_TTL_SECONDS,
        coalesce_seconds: float = DEFAULT_COALESCE_SECONDS,
        clock: Clock = utc_clock,
        events: EventSink | None = None,
        request_lease_seconds: int = DEFAULT_REQUEST_LEASE_SECONDS,
    ) -> None:
        """`clock` tells the time actions expire by (an aware datetime; UTC now by default); `events`
        receives the approval events (pipeline/approval_events.py; none by default, `EventLog()` keeps them);
        `request_lease_seconds`: how long a request with a request_id may take before a retry of it is
        answered afresh (taken to have died with its process; retries.py)."""
        if store is None:
            from beam_store.memory import InMemoryStore  # a deployment always gives its store

            store = InMemoryStore()
        self._setup = Setup(
            store,
            frame_ttl_seconds=frame_ttl_seconds,
            coalesce_seconds=coalesce_seconds,
            clock=clock,
            events=events,
            request_lease_seconds=request_lease_seconds,
        )

    @property
    def store(self) -> BeamStore:
        return self._setup.store

    def set_store(self, store: BeamStore) -> None:
        self._setup.store = store

    def set_event_sink(self, events: EventSink | None) -> None:
        """Where approval events go from now on (None: nowhere)."""
        self._setup.events = events

    def register_agent(
        self,
        name: str,
        runner: AgentRunner,
        *,
        action_ttl_seconds: float | None = None,
        policy: Policy | None = None,
        approvals: Mapping[str, Approvals] | None = None,
        timezone: str | None = None,
    ) -> None:
        """`action_ttl_seconds`: how long a person has to answer the agent's actions (24 h by default; a
        tool's own `expires_after` wins); `policy`: the agent's approval policy (riverbeam.Policy), which
        decides each tool call allow, ask or deny (without one, a tool that needs approval asks);
        `approvals`: who may answer each tool's actions, by tool name (riverbeam.Approvals); `timezone`:
        the IANA time zone of the policy's `now` (UTC by default; an unknown one is a ValueError)."""
        if not callable(getattr(runner, "run", None)):
            raise TypeError("a runner needs a run(input, emit) method")
        if timezone is not None:
            from ..policy.moments import zone

            zone(timezone)  # refused here, named, rather than at the agent's first call
        self._setup.agents[name] = runner
        self._setup.policies.pop(name, None)
        if policy is not None:
            self._setup.policies[name] = policy
        self._setup.approvals[name] = dict(approvals or {})
        self._setup.timezones.pop(name, None)
        if timezone is not None:
            self._setup.timezones[name] = timezone
        if action_ttl_seconds is not None:
            self._setup.action_ttls[name] = action_ttl_seconds

    def register_agents_on_first_use(self, loader: Callable[[], None]) -> None:
        """`loader` registers agents (with `register_agent`) when an agent is first needed, not now: a
        handler that serves no agent (a read, a WebSocket connect) never imports them or their config."""
        self._setup.loaders.append(loader)

    def load_agents(self) -> None:
        """Register now the agents `register_agents_on_first_use` defers, as the first request that names
        an agent would (bench/cold_start.py counts them in a cold start)."""
        self._setup.load_agents()

    def agents(self) -> dict[str, AgentRunner]:
        """The registered agents by name (loading those registered on first use)."""
        self._setup.load_agents()
        return dict(self._setup.agents)

    # invoke and resume, run here

    def invoke(
        self, request: InvokeRequest | dict[str, Any] | str, *, on_frame: FrameSink | None = None
    ) -> AgentResult | StreamAck:
        """Run the agent on the request: the Result, or with `stream` a StreamAck (frames to `on_frame`).
        Sent again with its `request_id`, it gets the first answer and runs nothing (retries.py)."""
        from . import accept, execute, retries

        req = parse_request(InvokeRequest, request)
        claim = retries.claim(self._setup, req)
        if claim.first is not None:
            return claim.first
        with claim:
            step = accept.open_invoke(self._setup, req, with_history=True)
            if req.stream:  # its answer is known now: a retry while it runs gets it too
                claim.keep(step.job().ack())
            answer = execute.answer_invoke(self._setup, step, on_frame, stream=req.stream)
            claim.keep(answer)
        return answer

    def resume(
        self, request: ResumeRequest | dict[str, Any] | str, *, on_frame: FrameSink | None = None
    ) -> StreamAck | VoteAck:
        """Resolve the actions atomically, then run the agent on the responses; frames go to `on_frame`.
        Sent again with the same request_ids, it gets the first StreamAck and runs nothing. Answers that
        only add votes (an action's quorum not reached) run nothing: a VoteAck says what each has."""
        from . import accept, execute

        step = accept.open_resume(self._setup, request, with_history=True)
        if isinstance(step, RunJob | VoteAck):  # answered before; only votes added (no run)
            return step if isinstance(step, VoteAck) else step.ack()
        execute.run_step(self._setup, step, on_frame, record_frames=True)
        return step.job().ack()

    # accepted here, run by a worker

    def accept_invoke(
        self,
        request: InvokeRequest | dict[str, Any] | str,
        *,
        run_id: str | None = None,
        new_interaction_id: str | None = None,
        hand_off: HandOff | None = None,
    ) -> RunJob:
        """Every check and the opening write of an invoke; `run_job` runs the agent later, in a worker.

        `run_id` names the run, and `new_interaction_id` the interaction a request without one starts.
        `hand_off(job)` passes a new job on (to a queue) before its answer is kept; where it fails, so
        does the request. Sent again with its `request_id`, the first job comes back, not handed off.
        """
        from . import accept, retries

        req = parse_request(InvokeRequest, request)
        claim = retries.claim(self._setup, req)
        if claim.first is not None:
            return retries.invoke_job(req, claim.first)
        with claim:
            job = accept.open_invoke(
                self._setup, req, run_id=run_id, new_interaction_id=new_interaction_id
            ).job()
            if hand_off is not None:
                hand_off(job)
            claim.keep(job.ack())
        return job

    def accept_resume(
        self, request: ResumeRequest | dict[str, Any] | str, *, hand_off: HandOff | None = None
    ) -> RunJob | VoteAck:
        """Every check and the atomic resolution of a resume; `run_job` runs the agent later, in a worker.
        `hand_off(job)` passes a new job on; a resume sent again gets the first job, not handed off."""
        from . import accept

        step = accept.open_resume(self._setup, request)
        if isinstance(step, RunJob | VoteAck):  # answered before; only votes added (no run)
            return step
        job = step.job()
        if hand_off is not None:
            hand_off(job)
        return job

    def accept_queued_invoke(self, body: Any, *, message_id: str) -> RunJob:
        """An invoke request from a queue producer, accepted once per message (a redelivery finds it) and
        once per request_id (another message with it gets the first job)."""
        from . import jobs, retries

        req = parse_request(InvokeRequest, body)
        claim = retries.claim(self._setup, req)
        if claim.first is not None:
            return retries.invoke_job(req, claim.first)
        with claim:
            job = jobs.accept_queued_invoke(self._setup, req, message_id)
            claim.keep(job.ack())
        return job

    def run_job(
        self,
        job: RunJob | dict[str, Any] | str,
        *,
        worker_id: str | None = None,
        lease_seconds: int = DEFAULT_LEASE_SECONDS,
        on_frame: FrameSink | None = None,
    ) -> AgentResult | None:
        """Run an accepted job once, whatever the number of deliveries (jobs.py: what a delivery may find):
        the Result, or None where the run had ended or its worker had died (the run closed `failed`)."""
        from . import jobs

        return jobs.run_job(self._setup, _job(job), worker_id, lease_seconds, on_frame)

    def abandon_job(self, job: RunJob | dict[str, Any] | str, failure: BeamError) -> None:
        """Close `failed` an accepted job that no worker will run (its queue refused it)."""
        from . import jobs

        jobs.abandon_job(self._setup, _job(job), failure)

    # pending actions nobody answered in time

    def sweep_expired(
        self, *, on_frame: FrameSink | None = None, limit: int = DEFAULT_SWEEP_LIMIT
    ) -> list[Action]:
        """Expire the pending actions of every session that are past their time (up to `limit` looked at;
        the next sweep goes on), close the interactions that waited on them, and send each an
        `action_expired` frame to `on_frame`; returns the actions it expired (sweep.py)."""
        from . import sweep  # only the sweep's function pays for its frame model

        return sweep.sweep(self._setup, on_frame, limit)

    def pending_approvals(self) -> Waiting:
        """What waits for a person across every session: how many pending actions, how long the oldest
        has waited (pending.py; the sweep's function sends them as metrics)."""
        from . import pending

        return pending.waiting(self._setup)

    # reads, for the session's owner only: any other reader is told the record does not exist

    def read_session(self, session_id: str, *, user_id: str) -> Session:
        return reads.session(self._setup, session_id, user_id)

    def read_messages(
        self,
        session_id: str,
        *,
        user_id: str,
        after_seq: int = 0,
        limit: int | None = None,
        groups: Sequence[str] = (),
    ) -> list[Message]:
        return reads.messages(self._setup, session_id, user_id, after_seq, limit, groups)

    def read_interaction(self, interaction_id: str, *, user_id: str) -> Interaction:
        return reads.interaction(self._setup, interaction_id, user_id)

    def read_run(self, run_id: str, *, user_id: str) -> Run:
        return reads.run(self._setup, run_id, user_id)

    def read_frames(
        self, run_id: str, *, user_id: str, after_seq: int = -1, limit: int | None = None
    ) -> list[dict[str, Any]]:
        """A streamed run's kept frames after `after_seq`, for a subscriber that connected late."""
        return reads.frames(self._setup, run_id, user_id, after_seq, limit)

    def list_grants(self, session_id: str, *, user_id: str) -> list[Grant]:
        """The session's standing grants, oldest first (its owner's only; CONTRACT 10)."""
        from . import grants

        return grants.list_grants(self._setup, session_id, user_id)

    def revoke_grant(self, session_id: str, grant_id: str, *, user_id: str) -> None:
        """Revoke one standing grant of the session: its later calls ask again."""
        from . import grants

        grants.revoke_grant(self._setup, session_id, grant_id, user_id)

    def read_action(self, action_id: str, *, user_id: str, groups: Sequence[str] = ()) -> Action:
        return reads.action(self._setup, action_id, user_id, groups)

    def list_approvals(
        self,
        *,
        user_id: str,
        groups: Sequence[str] = (),
        status: str = "pending",
        cursor: str | None = None,
        limit: int | None = None,
    ) -> ApprovalPage:
        """The pending actions the caller may answer across sessions, newest first (CONTRACT 11), after
        `cursor` (the last page's), `limit` at a time (1..100, 50 by default)."""
        from . import inbox

        return inbox.approvals(self._setup, user_id, groups, status, cursor, limit)

    def read_actions(
        self,
        session_id: str,
        *,
        user_id: str,
        status: str | None = None,
        after: str | None = None,
        limit: int | None = None,
    ) -> list[Action]:
        """A session's actions for an approval inbox (`status="pending"`: what waits for a person), by
        status then oldest first; `after` is `beam_store.records.action_cursor` of the last one read."""
        return reads.session_actions(self._setup, session_id, user_id, status, after, limit)

    # a session's WebSocket subscribers

    def subscribe(self, connection_id: str, session_id: str, user: AuthContext) -> None:
        """Subscribe a connection to the session's frames: its owner only (BEM-031); a new session is
        reserved for the subscriber."""
        subscriptions.subscribe(self._setup, connection_id, session_id, user)

    def subscriber(self, connection_id: str) -> AuthContext:
        """Who subscribed the connection (BEM-030 where nobody did)."""
        return subscriptions.subscriber(self._setup, connection_id)

    def connections(self, session_id: str) -> list[str]:
        """The session's live connection ids."""
        return subscriptions.connections(self._setup, session_id)

    def forget_connection(self, connection_id: str) -> None:
        subscriptions.forget(self._setup, connection_id)

"""RiverBeam: the pipeline that records every invocation, pauses for approvals and resumes."""

from __future__ import annotations

import functools
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, TypeVar

from aws_lambda_powertools import Logger
from beam_store import (
    Action,
    ActionConflict,
    ActionResponsePart,
    ActionResponseRecord,
    BeamStore,
    ErrorInfo,
    InMemoryStore,
    Interaction,
    InteractionBusy,
    InteractionInOtherSession,
    InteractionMissing,
    Message,
    MessageDraft,
    Run,
    RunClaimed,
    RunNotRunning,
    Session,
    SessionMissing,
    SessionOwnedByOther,
    StepWrite,
    StoreBusy,
    StoreConflict,
    TextPart,
    ToolOutcome,
    ToolResultPart,
    new_id,
    utc_now,
)
from beam_store.records import ContentPart, InteractionStatus
from pydantic import BaseModel, TypeAdapter

from .agents import AgentInput, AgentRunner, ResolvedAction, RunnerFailure, agent_id_for
from .errors import BeamError
from .intake import parse_body, parse_request
from .models import (
    ActionResponseEnvelope,
    AgentResult,
    DoneFrame,
    ErrorFrame,
    Frame,
    FrameHeader,
    InvokeRequest,
    NewMessage,
    ResumeHead,
    ResumeRequest,
    RunJob,
    RunStartedFrame,
    StreamAck,
)

logger = Logger(service="riverbeam")
DEFAULT_FRAME_TTL_SECONDS = 24 * 3600
# text deltas closer than this are sent as one frame: about 10 a second per run at most
DEFAULT_COALESCE_SECONDS = 0.1
# a worker holds a run this long; its queue must not redeliver the job sooner (visibility timeout)
DEFAULT_LEASE_SECONDS = 900
FrameSink = Callable[[FrameHeader], None]
_frame_adapter: TypeAdapter[FrameHeader] = TypeAdapter(Frame)


def _store_error(error: StoreConflict | StoreBusy) -> BeamError:
    match error:
        case SessionOwnedByOther():
            return BeamError("BEM-031", field="session_id")
        case SessionMissing():
            return BeamError("BEM-020", field="session_id")
        case InteractionMissing():
            return BeamError("BEM-022", field="interaction_id")
        case InteractionInOtherSession():
            # on invoke: not found (or not the caller's), never telling that it exists elsewhere
            return BeamError("BEM-022", field="interaction_id")
        case InteractionBusy():
            return BeamError("BEM-040", field="interaction_id")
        case StoreBusy():
            return BeamError("BEM-503")
    return BeamError("BEM-500")


def _action_error(
    action_id: str, current: Action | None, interaction_id: str, session_id: str, user_id: str
) -> BeamError | None:
    """Why `current` cannot be resolved by this resume, in the contract's order; None if it can."""
    where = "actions.action_id"
    if current is None or (current.session_id != session_id and current.user_id != user_id):
        return BeamError("BEM-027", f"action {action_id} not found", field=where)
    if current.interaction_id != interaction_id:
        return BeamError("BEM-064", f"action {action_id} belongs to another interaction", field=where)
    if current.session_id != session_id:
        return BeamError(
            "BEM-065", f"interaction {interaction_id} belongs to another session", field="interaction_id"
        )
    if current.status != "pending":
        return BeamError("BEM-066", f"action {action_id} is {current.status}, not pending", field=where)
    return None


def _with_ids(result: AgentResult, step: _Step) -> AgentResult:
    return result.model_copy(
        update={
            "agent_name": step.run.agent_name,
            "session_id": step.session.session_id,
            "interaction_id": step.interaction.interaction_id,
            "run_id": step.run.run_id,
        }
    )


def _closing_frames(result: AgentResult, failure: BeamError | None) -> list[FrameHeader]:
    error: list[FrameHeader] = (
        [] if failure is None else [ErrorFrame(code=failure.code, message=failure.message)]
    )
    return [*error, DoneFrame(result=result)]


def _expiry(recorder: _FrameRecorder | None) -> int:
    return recorder.expires_at() if recorder is not None else 0


def _interaction_ref(
    interaction_id: str, session_id: str, agent_name: str, status: InteractionStatus, now: str
) -> Interaction:
    """The interaction as a step writes it: the store takes its id, session and status (and, on create,
    the rest); it never reads it first."""
    return Interaction(
        interaction_id=interaction_id,
        session_id=session_id,
        agent_name=agent_name,
        status=status,
        created_at=now,
        updated_at=now,
    )


def _after(session: Session, written: list[Message]) -> Session:
    """The session as the step left it, so the next write expects the right message counter."""
    return session.model_copy(update={"last_seq": written[-1].seq}) if written else session


F = TypeVar("F", bound=Callable[..., Any])


def _hide_internal_errors(method: F) -> F:
    """A failure that is not a refusal (a store outage, a bug) is BEM-500 and tells nothing of internals."""

    @functools.wraps(method)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except BeamError:
            raise
        except Exception:
            logger.exception("internal error")
            raise BeamError("BEM-500") from None

    return guarded  # type: ignore[return-value]


def _as_failure(error: BaseException) -> BeamError:
    if isinstance(error, BeamError):
        return error
    logger.error("agent run failed", exc_info=error)
    return BeamError("BEM-500", "the agent failed")


def _checked_result(result: object, *, finished: bool = True) -> AgentResult:
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
    if any(not _is_uuid(i) for i in given) or len(set(given)) != len(given):
        raise ValueError(f"action ids must be distinct UUIDs, got {given}")
    for request in result.action_required:
        request.action_id = request.action_id or new_id()
    return result


def same_json(a: Any, b: Any) -> bool:
    """JSON values equal in type and value: `true` is not `1` (Python says it is), nor `"1"`; numbers
    compare by value (`1` equals `1.0`, as JSON does not tell them apart)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_json(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


_CHECK_ORDER = ["BEM-027", "BEM-064", "BEM-065", "BEM-066", "BEM-067", "BEM-068"]


def _normal_uuid(value: str) -> str | None:
    """The id in the form records are stored under, or None when it is no UUID (so: not found)."""
    try:
        return str(uuid.UUID(value))
    except (ValueError, TypeError, AttributeError):
        return None


def _is_uuid(value: object) -> bool:
    return isinstance(value, str) and _normal_uuid(value) is not None


def _response_error(
    action_id: str,
    stored: Action | None,
    envelope: ActionResponseEnvelope,
    interaction_id: str,
    session_id: str,
    req: ResumeRequest,
) -> BeamError | None:
    """The first check this response fails, in the contract's order; None if it can resolve the action."""
    error = _action_error(action_id, stored, interaction_id, session_id, req.auth_context.user_id)
    if error is not None or stored is None:
        return error
    if envelope.payload is not None and not (
        envelope.payload.tool == stored.tool and same_json(envelope.payload.args, stored.args)
    ):
        return BeamError(
            "BEM-067",
            f"action {action_id} asks for {stored.tool} with other args than the response names",
            field="actions.payload",
        )
    if stored.agent_name != req.agent_name:
        return BeamError(
            "BEM-068", f"action {action_id} was requested by agent {stored.agent_name!r}", field="agent_name"
        )
    return None


@dataclass
class _Step:
    """What one pass through the pipeline knows about itself."""

    session: Session
    interaction: Interaction
    run: Run
    kind: Literal["invoke", "resume"]
    runner: AgentRunner
    history: list[Message]
    content: list[ContentPart]
    resolved: list[Action] = field(default_factory=list)

    def job(self) -> RunJob:
        return RunJob(
            kind=self.kind,
            agent_name=self.run.agent_name,
            session_id=self.session.session_id,
            interaction_id=self.interaction.interaction_id,
            run_id=self.run.run_id,
            content=[p for p in self.content if isinstance(p, TextPart)],
            action_ids=[a.action_id for a in self.resolved],
        )


class _FrameEmitter:
    """Numbers a run's frames and hands them to the sinks. Text deltas that come within
    `coalesce_seconds` of the first one pending are sent as one, so a client gets a few frames a second
    however fast the model streams."""

    def __init__(self, run: Run, sinks: list[FrameSink], coalesce_seconds: float = 0.0) -> None:
        self.header = {
            "session_id": run.session_id,
            "interaction_id": run.interaction_id,
            "run_id": run.run_id,
        }
        self.sinks = sinks
        self.next_seq = 0
        self.coalesce_seconds = coalesce_seconds
        self.pending: dict[str, Any] | None = None
        self.pending_since = 0.0

    def emit(self, frame: FrameHeader | dict[str, Any]) -> None:
        body = frame.model_dump(mode="json") if isinstance(frame, BaseModel) else dict(frame)
        if body.get("type") == "text_delta" and self.coalesce_seconds > 0:
            now = time.monotonic()
            if self.pending is not None and now - self.pending_since < self.coalesce_seconds:
                self.pending["text"] = str(self.pending.get("text", "")) + str(body.get("text", ""))
                return
            self.flush()
            self.pending, self.pending_since = body, now
            return
        self.flush()
        self._send(body)

    def flush(self) -> None:
        if self.pending is not None:
            pending, self.pending = self.pending, None
            self._send(pending)

    def stamp(self, frames: list[FrameHeader]) -> list[FrameHeader]:
        """The frames as they will be sent next, numbered, but not sent (to be stored first)."""
        self.flush()
        return [
            _frame_adapter.validate_python(
                f.model_dump(mode="json") | self.header | {"frame_seq": self.next_seq + i}
            )
            for i, f in enumerate(frames)
        ]

    def send_stamped(self, frames: list[FrameHeader]) -> None:
        for frame in frames:
            self._send(frame.model_dump(mode="json"))

    def _send(self, body: dict[str, Any]) -> None:
        full = _frame_adapter.validate_python(body | self.header | {"frame_seq": self.next_seq})
        self.next_seq += 1
        for sink in self.sinks:
            try:
                sink(full)
            except Exception:  # a broken listener must not break the run
                logger.exception("frame sink failed", extra={"run_id": full.run_id})


class _FrameRecorder:
    """Keeps a streamed run's frames in the store, so a late subscriber can read them back. Written in
    batches: every 25 frames, a second after the last write, and at `done`."""

    BATCH = 25
    SECONDS = 1.0

    def __init__(
        self, store: BeamStore, run_id: str, ttl_seconds: int, *, runs_tools_first: bool = False
    ) -> None:
        self.store, self.run_id, self.ttl_seconds = store, run_id, ttl_seconds
        # frames kept before a tool runs, so that a worker dying in the tool has stored all it sent: a
        # resume runs its approved tools right after `run_started`
        self.kept_before_tools = {"tool_call", "done"} | ({"run_started"} if runs_tools_first else set())
        self.buffer: list[dict[str, Any]] = []
        self.written_at = time.monotonic()
        self.stored_through = -1  # frames the step's closing write already stored

    def expires_at(self) -> int:
        return int(time.time()) + self.ttl_seconds

    def take(self) -> list[dict[str, Any]]:
        frames, self.buffer = self.buffer, []
        return frames

    def __call__(self, frame: FrameHeader) -> None:
        if frame.frame_seq <= self.stored_through:
            return
        self.buffer.append(frame.model_dump(mode="json"))
        due = time.monotonic() - self.written_at >= self.SECONDS
        if len(self.buffer) >= self.BATCH or due or getattr(frame, "type", "") in self.kept_before_tools:
            frames, self.buffer = self.buffer, []
            self.written_at = time.monotonic()
            self.store.append_frames(self.run_id, frames, self.expires_at())


class RiverBeam:
    def __init__(
        self,
        store: BeamStore | None = None,
        *,
        frame_ttl_seconds: int = DEFAULT_FRAME_TTL_SECONDS,
        coalesce_seconds: float = DEFAULT_COALESCE_SECONDS,
    ) -> None:
        self._store: BeamStore = store if store is not None else InMemoryStore()
        self._agents: dict[str, AgentRunner] = {}
        self._frame_sinks: list[FrameSink] = []
        self.frame_ttl_seconds = frame_ttl_seconds
        self.coalesce_seconds = coalesce_seconds

    @property
    def store(self) -> BeamStore:
        return self._store

    def set_store(self, store: BeamStore) -> None:
        self._store = store

    def register_agent(self, name: str, runner: AgentRunner) -> None:
        if not callable(getattr(runner, "run", None)):
            raise TypeError("a runner needs a run(input, emit) method")
        self._agents[name] = runner

    def add_frame_sink(self, sink: FrameSink) -> None:
        """Every frame of every run also goes to `sink` (the deployment's WebSocket push, for one)."""
        self._frame_sinks.append(sink)

    def _sinks(self, on_frame: FrameSink | None) -> list[FrameSink]:
        """Where a run's frames go: the caller's sink, then every sink added to the beam."""
        return ([on_frame] if on_frame is not None else []) + self._frame_sinks

    def _runner(self, agent_name: str) -> AgentRunner:
        runner = self._agents.get(agent_name)
        if runner is None:
            raise BeamError("BEM-021", f"unknown agent_name {agent_name!r}", field="agent_name")
        return runner

    def _commit(self, step: StepWrite) -> list[Message]:
        try:
            return self._store.commit(step)
        except (StoreConflict, StoreBusy) as error:
            raise _store_error(error) from None
        except Exception:
            logger.exception("the store refused a step")
            raise BeamError("BEM-500") from None

    # invoke

    @_hide_internal_errors
    def invoke(
        self, request: InvokeRequest | dict[str, Any] | str, *, on_frame: FrameSink | None = None
    ) -> AgentResult | StreamAck:
        """Run the agent on the request: the Result, or with `stream` a StreamAck (frames to `on_frame`)."""
        req = parse_request(InvokeRequest, request)
        step = self._begin_invoke(req)
        result = self._run_step(step, on_frame, record_frames=req.stream)
        if req.stream:
            return step.job().ack()
        if step.run.status == "failed" and step.run.error is not None:
            raise BeamError(
                step.run.error.code if step.run.error.code in _RAISABLE else "BEM-500", step.run.error.message
            )
        return result

    @_hide_internal_errors
    def accept_invoke(
        self,
        request: InvokeRequest | dict[str, Any] | str,
        *,
        run_id: str | None = None,
        new_interaction_id: str | None = None,
    ) -> RunJob:
        """Every check and the opening write of an invoke; `run_job` runs the agent later, in a worker.

        `run_id` names the run, and `new_interaction_id` the interaction a request without one starts (a
        queue consumer derives both from the message, so that a redelivery finds them).
        """
        req = parse_request(InvokeRequest, request)
        return self._begin_invoke(req, run_id=run_id, new_interaction_id=new_interaction_id).job()

    def _begin_invoke(
        self, req: InvokeRequest, *, run_id: str | None = None, new_interaction_id: str | None = None
    ) -> _Step:
        runner = self._runner(req.agent_name)
        session_id, user = str(req.session_id), req.auth_context
        session, history = self._store.get_session_with_messages(session_id)
        if session is not None and session.user_id != user.user_id:
            raise BeamError("BEM-031", field="session_id")
        now = utc_now()
        session_op: Literal["create", "update"] = "update"
        if session is None:
            session_op = "create"
            session = Session(
                session_id=session_id,
                user_id=user.user_id,
                profile_id=user.profile_id,
                created_at=now,
                updated_at=now,
            )
        interaction_id = str(req.interaction_id) if req.interaction_id else new_interaction_id or new_id()
        interaction = _interaction_ref(interaction_id, session_id, req.agent_name, "in_progress", now)
        run = self._new_run(interaction, req.agent_name, now, run_id)
        draft = MessageDraft(
            message_id=new_id(),
            interaction_id=interaction_id,
            run_id=run.run_id,
            role="human",
            content=list(req.content),
            created_at=now,
        )
        written = self._commit(
            StepWrite(
                session=session,
                session_op=session_op,
                interaction=interaction,
                interaction_op="acquire" if req.interaction_id else "create",
                run=run,
                run_op="create",
                messages=[draft],
            )
        )
        return _Step(
            session=_after(session, written),
            interaction=interaction,
            run=run,
            kind="invoke",
            runner=runner,
            history=history + written,
            content=list(req.content),
        )

    @staticmethod
    def _new_run(interaction: Interaction, agent_name: str, now: str, run_id: str | None = None) -> Run:
        return Run(
            run_id=run_id or new_id(),
            session_id=interaction.session_id,
            interaction_id=interaction.interaction_id,
            agent_name=agent_name,
            agent_id=agent_id_for(agent_name),
            status="running",
            created_at=now,
            updated_at=now,
        )

    # resume

    @_hide_internal_errors
    def resume(
        self, request: ResumeRequest | dict[str, Any] | str, *, on_frame: FrameSink | None = None
    ) -> StreamAck:
        """Resolve the actions atomically, then run the agent on the responses; frames go to `on_frame`."""
        step = self._begin_resume(request)
        self._run_step(step, on_frame, record_frames=True)
        return step.job().ack()

    @_hide_internal_errors
    def accept_resume(self, request: ResumeRequest | dict[str, Any] | str) -> RunJob:
        """Every check and the atomic resolution of a resume; `run_job` runs the agent later, in a worker."""
        return self._begin_resume(request).job()

    def _begin_resume(self, request: ResumeRequest | dict[str, Any] | str) -> _Step:
        # the contract's order: 062, then ownership (031), then action ids (063), and only then the rest of
        # the body (BEM-001), so a specific code is never hidden behind the generic one
        body = request.model_dump(mode="json") if isinstance(request, ResumeRequest) else parse_body(request)
        if not body.get("interaction_id"):
            raise BeamError("BEM-062", "resume needs the interaction_id it resumes", field="interaction_id")
        head = parse_request(ResumeHead, body)
        runner = self._runner(head.agent_name)
        session_id, interaction_id, user = (
            str(head.session_id),
            str(head.interaction_id),
            head.auth_context.user_id,
        )
        session, history = self._store.get_session_with_messages(session_id)
        if session is None:
            raise BeamError("BEM-020", f"session {session_id} not found", field="session_id")
        if session.user_id != user:
            raise BeamError("BEM-031", field="session_id")
        raw_actions = body.get("actions")
        for i, raw in enumerate(raw_actions if isinstance(raw_actions, list) else []):
            if isinstance(raw, dict) and "action_id" in raw and not _is_uuid(raw["action_id"]):
                raise BeamError(
                    "BEM-063", f"actions[{i}].action_id is not a UUID", field=f"actions.{i}.action_id"
                )
        req = parse_request(ResumeRequest, body)

        responses: dict[str, ActionResponseEnvelope] = {}
        for i, envelope in enumerate(req.actions):
            action_id = _normal_uuid(envelope.action_id) or envelope.action_id  # checked above (BEM-063)
            if action_id in responses:
                raise BeamError(
                    "BEM-001",
                    f"invalid request: actions.{i}.action_id: answered twice",
                    field=f"actions.{i}.action_id",
                )
            responses[action_id] = envelope

        now = utc_now()
        interaction = _interaction_ref(interaction_id, session_id, req.agent_name, "in_progress", now)
        run = self._new_run(interaction, req.agent_name, now)
        resolved: list[Action] = []
        found = {action_id: self._store.get_action(action_id) for action_id in responses}
        failures = [
            _response_error(action_id, found[action_id], envelope, interaction_id, session_id, req)
            for action_id, envelope in responses.items()
        ]
        # each check over every action before the next check, as the contract orders them
        first = min(
            (f for f in failures if f is not None), key=lambda f: _CHECK_ORDER.index(f.code), default=None
        )
        if first is not None:
            raise first
        for action_id, envelope in responses.items():
            stored = found[action_id]
            assert stored is not None
            resolved.append(
                stored.model_copy(
                    update={
                        "status": "resolved" if envelope.status == "submitted" else "cancelled",
                        "response": ActionResponseRecord(
                            status=envelope.status,
                            request_id=str(envelope.request_id),
                            who=user,
                            when=now,
                            reason=envelope.reason,
                        ),
                        "resolved_run_id": run.run_id,
                    }
                )
            )

        drafts = []
        if req.content:
            drafts.append(
                MessageDraft(
                    message_id=new_id(),
                    interaction_id=interaction_id,
                    run_id=run.run_id,
                    role="human",
                    content=list(req.content),
                    created_at=now,
                )
            )
        for action in resolved:
            drafts.extend(self._resolution_messages(action, run, now))
        try:
            written = self._store.commit(
                StepWrite(
                    session=session,
                    session_op="update",
                    interaction=interaction,
                    interaction_op="acquire",
                    run=run,
                    run_op="create",
                    messages=drafts,
                    resolve_actions=resolved,
                )
            )
        except ActionConflict as conflict:
            raise _action_error(
                conflict.action_id, conflict.current, interaction_id, session_id, user
            ) or BeamError("BEM-066", f"action {conflict.action_id} is not pending") from None
        except (StoreConflict, StoreBusy) as error:
            raise _store_error(error) from None
        for action in resolved:
            assert action.response is not None
            logger.info(
                "agent_resumed",
                extra={
                    "session_id": session_id,
                    "interaction_id": interaction_id,
                    "run_id": run.run_id,
                    "action_id": action.action_id,
                    "tool": action.tool,
                    "response": action.response.status,
                },
            )
        return _Step(
            session=_after(session, written),
            interaction=interaction,
            run=run,
            kind="resume",
            runner=runner,
            history=history + written,
            content=list(req.content),
            resolved=resolved,
        )

    @staticmethod
    def _resolution_messages(action: Action, run: Run, now: str) -> Iterator[MessageDraft]:
        assert action.response is not None
        response = action.response
        yield MessageDraft(
            message_id=new_id(),
            interaction_id=action.interaction_id,
            run_id=run.run_id,
            role="human",
            type="action_result",
            created_at=now,
            content=[
                ActionResponsePart(action_id=action.action_id, status=response.status, reason=response.reason)
            ],
        )
        if response.status == "cancelled":
            refusal = f"{response.who} refused to run {action.tool}" + (
                f": {response.reason}" if response.reason else ""
            )
            yield MessageDraft(
                message_id=new_id(),
                interaction_id=action.interaction_id,
                run_id=run.run_id,
                role="tool",
                created_at=now,
                content=[
                    ToolResultPart(
                        tool_call_id=action.action_id,
                        name=action.tool,
                        status="refused",
                        error=ErrorInfo(code="BEM-069", message=refusal),
                    )
                ],
            )

    # reads, for the session's owner only: any other reader is told the record does not exist

    def _owned_session(self, session_id: str, user_id: str, code: str, what: str) -> Session:
        normal = _normal_uuid(session_id)
        session = self._store.get_session(normal) if normal else None
        if session is None or session.user_id != user_id:
            raise BeamError(code, f"{what} not found")
        return session

    @_hide_internal_errors
    def read_session(self, session_id: str, *, user_id: str) -> Session:
        return self._owned_session(session_id, user_id, "BEM-020", f"session {session_id}")

    @_hide_internal_errors
    def read_messages(
        self, session_id: str, *, user_id: str, after_seq: int = 0, limit: int | None = None
    ) -> list[Message]:
        session = self._owned_session(session_id, user_id, "BEM-020", f"session {session_id}")
        return self._store.list_messages(session.session_id, after_seq=after_seq, limit=limit)

    @_hide_internal_errors
    def read_interaction(self, interaction_id: str, *, user_id: str) -> Interaction:
        found = self._store.get_interaction(normal) if (normal := _normal_uuid(interaction_id)) else None
        what = f"interaction {interaction_id}"
        self._owned_session(found.session_id if found else "", user_id, "BEM-022", what)
        assert found is not None
        return found

    @_hide_internal_errors
    def read_run(self, run_id: str, *, user_id: str) -> Run:
        found = self._store.get_run(normal) if (normal := _normal_uuid(run_id)) else None
        self._owned_session(found.session_id if found else "", user_id, "BEM-023", f"run {run_id}")
        assert found is not None
        return found

    @_hide_internal_errors
    def read_frames(
        self, run_id: str, *, user_id: str, after_seq: int = -1, limit: int | None = None
    ) -> list[dict[str, Any]]:
        """A streamed run's kept frames after `after_seq`, for a subscriber that connected late."""
        run = self.read_run(run_id, user_id=user_id)
        return self._store.list_frames(run.run_id, after_seq=after_seq, limit=limit)

    @_hide_internal_errors
    def read_action(self, action_id: str, *, user_id: str) -> Action:
        found = self._store.get_action(normal) if (normal := _normal_uuid(action_id)) else None
        if found is None or found.user_id != user_id:
            raise BeamError("BEM-027", f"action {action_id} not found")
        return found

    # a job accepted earlier, run by a worker

    @_hide_internal_errors
    def run_job(
        self,
        job: RunJob | dict[str, Any] | str,
        *,
        worker_id: str | None = None,
        lease_seconds: int = DEFAULT_LEASE_SECONDS,
        on_frame: FrameSink | None = None,
    ) -> AgentResult | None:
        """Run an accepted job once, whatever the number of deliveries.

        The worker first claims the run. A run already ended is left alone (None); a run claimed by a
        worker whose lease holds is refused with BEM-042, to be delivered again later; a run whose
        lease lapsed (its worker died) is closed `failed`, and the tools it may have run are recorded
        with an unknown outcome, never run again (None).
        """
        job = job if isinstance(job, RunJob) else parse_request(RunJob, job)
        now = datetime.now(UTC)
        lease = (now + timedelta(seconds=lease_seconds)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        try:
            run = self._store.claim_run(job.run_id, worker_id or new_id(), lease, utc_now())
        except RunNotRunning:
            logger.info("job of an ended run dropped", extra={"run_id": job.run_id})
            return None
        except RunClaimed as claimed:
            if (claimed.current.lease_expires_at or "") > utc_now():
                raise BeamError("BEM-042", f"run {job.run_id} is being run by another worker") from None
            lost = BeamError("BEM-504", "the worker running this step stopped before it ended")
            self._close_failed_job(job, claimed.current, lost, tools_may_have_run=True, on_frame=on_frame)
            return None
        # the run is ours now: whatever goes wrong from here closes it, so it never stays running
        try:
            runner = self._runner(job.agent_name)
            session, history = self._store.get_session_with_messages(job.session_id)
            if session is None:
                raise BeamError("BEM-020", f"session {job.session_id} not found", field="session_id")
            # only actions this run resolved and nobody ran: a stale job cannot run a tool again
            resolved = [
                a
                for a in (self._store.get_action(i) for i in job.action_ids)
                if a is not None and a.resolved_run_id == run.run_id and a.outcome is None
            ]
        except Exception as error:
            failure = _as_failure(error)
            self._close_failed_job(job, run, failure, tools_may_have_run=False, on_frame=on_frame)
            raise failure from None
        interaction = _interaction_ref(
            job.interaction_id, job.session_id, job.agent_name, "in_progress", run.updated_at
        )
        step = _Step(
            session=session,
            interaction=interaction,
            run=run,
            kind=job.kind,
            runner=runner,
            history=history,
            content=list(job.content),
            resolved=resolved,
        )
        return self._run_step(step, on_frame, record_frames=True)

    @_hide_internal_errors
    def abandon_job(self, job: RunJob | dict[str, Any] | str, failure: BeamError) -> None:
        """Close `failed` an accepted job that no worker will run (its queue refused it). Its resolved
        actions keep no outcome: their tools never run."""
        job = job if isinstance(job, RunJob) else parse_request(RunJob, job)
        run = self._store.get_run(job.run_id)
        if run is not None and run.status == "running":
            self._close_failed_job(job, run, failure, tools_may_have_run=False)

    def _close_failed_job(
        self,
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
        now = utc_now()
        kept = self._store.list_frames(run.run_id)
        emitter = _FrameEmitter(run, self._sinks(on_frame))
        emitter.next_seq = kept[-1]["frame_seq"] + 1 if kept else 0
        ended = AgentResult(
            agent_name=run.agent_name,
            session_id=run.session_id,
            interaction_id=run.interaction_id,
            run_id=run.run_id,
        )
        closing = emitter.stamp(_closing_frames(ended, failure))
        lost = ErrorInfo(code=failure.code, message=failure.message)
        unknown = ToolOutcome(
            status="error",
            error=ErrorInfo(code="BEM-334", message="outcome unknown: the worker stopped while the tool ran"),
        )
        actions = [self._store.get_action(i) for i in job.action_ids] if tools_may_have_run else []
        open_tools = [
            a.model_copy(update={"outcome": unknown})
            for a in actions
            if a is not None
            and a.status == "resolved"
            and a.resolved_run_id == run.run_id
            and a.outcome is None
        ]
        session = self._store.get_session(job.session_id)
        if session is None:
            raise BeamError("BEM-020", f"session {job.session_id} not found", field="session_id")
        interaction = _interaction_ref(job.interaction_id, job.session_id, job.agent_name, "failed", now)
        messages = [
            MessageDraft(
                message_id=new_id(),
                interaction_id=job.interaction_id,
                run_id=run.run_id,
                role="tool",
                created_at=now,
                content=[
                    ToolResultPart(tool_call_id=a.action_id, name=a.tool, status="error", error=unknown.error)
                ],
            )
            for a in open_tools
        ]
        self._commit(
            StepWrite(
                session=session,
                session_op="update",
                interaction=interaction,
                interaction_op="release",
                run=run.model_copy(
                    update={"status": "failed", "error": lost, "updated_at": now, "ended_at": now}
                ),
                run_op="close",
                messages=messages,
                record_outcomes=open_tools,
                touch_last_active=True,
                frames=[f.model_dump(mode="json") for f in closing],
                frames_expire_at=int(time.time()) + self.frame_ttl_seconds,
            )
        )
        emitter.send_stamped(closing)
        logger.warning(
            "run closed failed",
            extra={"run_id": run.run_id, "code": failure.code, "unknown_tools": len(open_tools)},
        )

    # the agent, then the step's closing write

    def _run_step(self, step: _Step, on_frame: FrameSink | None, *, record_frames: bool) -> AgentResult:
        """Run the agent and close the step. A streamed run's frames are kept for late subscribers."""
        sinks = self._sinks(on_frame)
        recorder = (
            _FrameRecorder(
                self._store, step.run.run_id, self.frame_ttl_seconds, runs_tools_first=bool(step.resolved)
            )
            if record_frames
            else None
        )
        if recorder is not None:
            sinks.insert(0, recorder)
        emitter = _FrameEmitter(step.run, sinks, self.coalesce_seconds)
        emitter.emit(RunStartedFrame(agent_name=step.run.agent_name, kind=step.kind))
        actions = [
            ResolvedAction(
                action_id=a.action_id,
                status=a.response.status,
                tool=a.tool,
                args=a.args,
                reason=a.response.reason,
            )
            for a in step.resolved
            if a.response is not None
        ]
        agent_input = AgentInput(
            agent_name=step.run.agent_name,
            session_id=step.session.session_id,
            interaction_id=step.interaction.interaction_id,
            run_id=step.run.run_id,
            user_id=step.session.user_id,
            profile_id=step.session.profile_id,
            content=step.content,
            history=step.history,
            actions=actions,
        )
        failure: BeamError | None = None
        partial = AgentResult()
        with self._log_context(step):
            try:
                result = _checked_result(step.runner.run(agent_input, emitter.emit))
            except RunnerFailure as failed:
                failure = _as_failure(failed.cause)
                try:
                    partial = _checked_result(failed.partial, finished=False)
                except Exception:
                    logger.exception("the runner's partial result is unusable")
            except Exception as error:
                failure = _as_failure(error)
            if failure is not None:
                result = partial
            # the last frames, and the frames not yet kept, are stored with the step's closing write
            final = _with_ids(result, step)
            closing = emitter.stamp(_closing_frames(final, failure))
            kept = recorder.take() + [f.model_dump(mode="json") for f in closing] if recorder else []
            try:
                self._close_step(step, result, failure, frames=kept, frames_expire_at=_expiry(recorder))
                if recorder is not None:
                    recorder.stored_through = closing[-1].frame_seq
                emitter.send_stamped(closing)
                return final
            except Exception as error:
                failure = _as_failure(error)
                logger.error("closing the run failed", extra={"code": failure.code})
                if recorder is not None:  # not stored after all: written with the frames that follow
                    recorder.buffer = kept[: len(kept) - len(closing)] + recorder.buffer
                # close it failed rather than leave it running: first keeping what the tools did, then bare
                for fallback in (AgentResult(tool_outcomes=result.tool_outcomes), AgentResult()):
                    try:
                        self._close_step(step, fallback, failure)
                        result = fallback
                        break
                    except Exception:
                        logger.exception("the run could not be closed")
        final = _with_ids(result, step)
        for frame in _closing_frames(final, failure):
            emitter.emit(frame)
        return final

    @contextmanager
    def _log_context(self, step: _Step) -> Iterator[None]:
        keys = {
            "session_id": step.session.session_id,
            "interaction_id": step.interaction.interaction_id,
            "run_id": step.run.run_id,
        }
        logger.thread_safe_append_keys(**keys)  # runs may share the process: keys per thread
        try:
            yield
        finally:
            logger.thread_safe_remove_keys(list(keys))

    def _close_step(
        self,
        step: _Step,
        result: AgentResult,
        failure: BeamError | None,
        *,
        frames: list[dict[str, Any]] | None = None,
        frames_expire_at: int = 0,
    ) -> None:
        now = utc_now()
        run, interaction = step.run, step.interaction
        if failure is not None:
            run_status, interaction_status = "failed", "failed"
            error: ErrorInfo | None = ErrorInfo(code=failure.code, message=failure.message)
        else:
            error = None
            run_status = "interrupted" if result.interrupted else "completed"
            interaction_status = "in_progress" if result.interrupted else "completed"
        closed = run.model_copy(
            update={"status": run_status, "error": error, "updated_at": now, "ended_at": now}
        )
        drafts, outcomes, opened = [], [], []
        # what ran is kept even when the run failed; only a run that ended well opens actions
        submitted = {a.action_id: a for a in step.resolved if a.status == "resolved"}
        outcomes = [
            submitted[i].model_copy(update={"outcome": o})
            for i, o in result.tool_outcomes.items()
            if i in submitted
        ]
        messages = list(result.messages) or (
            [NewMessage(role="ai", content=result.content)] if result.content else []
        )
        answered = {p.tool_call_id for m in messages for p in m.content if isinstance(p, ToolResultPart)}
        missing = [
            NewMessage(
                role="tool",
                content=[
                    ToolResultPart(
                        tool_call_id=a.action_id,
                        name=a.tool,
                        status=a.outcome.status if a.outcome else "error",
                        output=a.outcome.output if a.outcome else None,
                        error=a.outcome.error if a.outcome else None,
                    )
                ],
            )
            for a in outcomes
            if a.action_id not in answered
        ]
        drafts = [
            MessageDraft(
                message_id=new_id(),
                interaction_id=interaction.interaction_id,
                run_id=run.run_id,
                role=m.role,
                type=m.type,
                content=m.content,
                created_at=now,
            )
            for m in missing + messages
        ]
        for request in result.action_required if failure is None else []:
            opened.append(
                Action(
                    action_id=request.action_id or new_id(),
                    session_id=run.session_id,
                    interaction_id=run.interaction_id,
                    run_id=run.run_id,
                    user_id=step.session.user_id,
                    agent_name=run.agent_name,
                    kind=request.kind,
                    tool=request.tool,
                    args=request.args,
                    status="pending",
                    created_at=now,
                    updated_at=now,
                )
            )
        self._commit(
            StepWrite(
                session=step.session,
                session_op="update",
                interaction=interaction.model_copy(update={"status": interaction_status}),
                interaction_op="release",
                run=closed,
                run_op="close",
                messages=drafts,
                open_actions=opened,
                record_outcomes=outcomes,
                touch_last_active=True,
                frames=frames or [],
                frames_expire_at=frames_expire_at,
            )
        )
        step.run = closed


# codes a failed non-streamed invoke raises as they are (the model's own failures among them: their
# messages are ours and name no internals); anything else is BEM-500
_RAISABLE = {"BEM-041", "BEM-503", *(f"BEM-34{n}" for n in range(9))}

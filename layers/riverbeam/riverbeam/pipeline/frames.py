"""A run's frames: numbered and coalesced by a FrameEmitter, kept in the store by a FrameRecorder. Each
keeps its own state and changes it only through its own methods. A frame is a model from the agent's emit to
the sinks; it becomes JSON only where it leaves (the store, a WebSocket)."""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any, Literal

from beam_store import BeamStore, Run
from pydantic import BaseModel, TypeAdapter

from ..errors import BeamError
from ..models import AgentResult, DoneFrame, ErrorFrame, Frame, FrameHeader, RunStartedFrame, TextDeltaFrame

logger = logging.getLogger(__name__)
FrameSink = Callable[[FrameHeader], None]
# a text_delta carries at most this many characters (more are sent as several): at most 96 KiB of JSON
# even with every character escaped as \u00XX, under API Gateway's 128 KB a WebSocket message
MAX_DELTA_CHARS = 16 * 1024


@functools.cache
def frame_adapter() -> TypeAdapter[FrameHeader]:
    """Every frame by its `type`; built by the first step that sends a frame, not at import."""
    return TypeAdapter(Frame)


def started_frame(run: Run, kind: Literal["invoke", "resume"]) -> dict[str, Any]:
    """A run's first frame (frame_seq 0) as it is stored: what its FrameEmitter sends first."""
    ids = {"session_id": run.session_id, "interaction_id": run.interaction_id, "run_id": run.run_id}
    return RunStartedFrame(agent_name=run.agent_name, kind=kind, frame_seq=0, **ids).model_dump(mode="json")


def closing_frames(result: AgentResult, failure: BeamError | None) -> list[FrameHeader]:
    """How a run ends for its subscribers: `error` where it failed, then `done` with its Result."""
    error: list[FrameHeader] = (
        [] if failure is None else [ErrorFrame(code=failure.code, message=failure.message)]
    )
    return [*error, DoneFrame(result=result)]


class RunEndedElsewhere(Exception):
    """The run was closed by another process (this one outlived its lease): its frames go no further."""


class FrameEmitter:
    """Numbers a run's frames (from `first_seq`) and hands them to the sinks. Text deltas that come within
    `coalesce_seconds` of the first one pending are sent as one, so a client gets a few frames a second
    however fast the model streams."""

    def __init__(
        self, run: Run, sinks: Sequence[FrameSink], coalesce_seconds: float = 0.0, *, first_seq: int = 0
    ) -> None:
        self._header = {
            "session_id": run.session_id,
            "interaction_id": run.interaction_id,
            "run_id": run.run_id,
        }
        self._sinks = list(sinks)
        self._next_seq = first_seq
        self._coalesce_seconds = coalesce_seconds
        self._pending: TextDeltaFrame | None = None
        self._pending_since = 0.0
        self._ended_elsewhere = False

    def emit(self, frame: FrameHeader | dict[str, Any]) -> None:
        """A frame of the run's; an agent's dict is checked once, here, and travels as its model after."""
        model = frame if isinstance(frame, BaseModel) else frame_adapter().validate_python(frame)
        if isinstance(model, TextDeltaFrame) and self._coalesce_seconds > 0:
            now = time.monotonic()
            if self._pending is not None and now - self._pending_since < self._coalesce_seconds:
                self._pending = self._pending.model_copy(update={"text": self._pending.text + model.text})
                return
            self.flush()
            self._pending, self._pending_since = model, now
            return
        self.flush()
        self._send(model)

    def flush(self) -> None:
        if self._pending is not None:
            pending, self._pending = self._pending, None
            self._send(pending)

    def stamp(self, frames: list[FrameHeader]) -> list[FrameHeader]:
        """The frames as they will be sent next, numbered, but not sent (to be stored first)."""
        self.flush()
        return [self._stamped(frame, self._next_seq + i) for i, frame in enumerate(frames)]

    def send_stamped(self, frames: list[FrameHeader]) -> None:
        for frame in frames:
            self._send(frame)

    def _stamped(self, frame: FrameHeader, frame_seq: int) -> FrameHeader:
        return frame.model_copy(update={**self._header, "frame_seq": frame_seq})

    def _send(self, frame: FrameHeader) -> None:
        if isinstance(frame, TextDeltaFrame) and len(frame.text) > MAX_DELTA_CHARS:
            for start in range(0, len(frame.text), MAX_DELTA_CHARS):
                self._send_one(frame.model_copy(update={"text": frame.text[start : start + MAX_DELTA_CHARS]}))
            return
        self._send_one(frame)

    def _send_one(self, frame: FrameHeader) -> None:
        if self._ended_elsewhere:
            return
        full = self._stamped(frame, self._next_seq)
        self._next_seq += 1
        for sink in self._sinks:
            try:
                sink(full)
            except RunEndedElsewhere:  # its subscribers hear the run's end from the process that closed it
                self._ended_elsewhere = True
                logger.warning(
                    "the run ended elsewhere: its frames go no further", extra={"run_id": full.run_id}
                )
                return
            except Exception:  # a broken listener must not break the run
                logger.exception("frame sink failed", extra={"run_id": full.run_id})


class FrameRecorder:
    """Keeps a streamed run's frames in the store, so a late subscriber can read them back. Written in
    batches: every 25 frames, a second after the last write, and at `done`; the last of them go with the
    step's closing write (`take`, then `stored_through` once that write is done)."""

    BATCH = 25
    SECONDS = 1.0

    def __init__(
        self, store: BeamStore, run_id: str, ttl_seconds: int, *, runs_tools_first: bool = False
    ) -> None:
        self._store, self._run_id, self._ttl_seconds = store, run_id, ttl_seconds
        # frames kept before a tool runs, so that a worker dying in the tool has stored all it sent: a
        # resume runs its approved tools right after `run_started`
        self._kept_before_tools = {"tool_call", "done"} | ({"run_started"} if runs_tools_first else set())
        self._buffer: list[dict[str, Any]] = []
        self._written_at = time.monotonic()
        self._stored_through = -1  # frames the step's closing write already stored
        self._closed_here = False

    def expires_at(self) -> int:
        return int(time.time()) + self._ttl_seconds  # DynamoDB's TTL, by the wall clock

    def take(self) -> list[dict[str, Any]]:
        """The frames not stored yet, for a write of the step's own; `put_back` them if it fails."""
        frames, self._buffer = self._buffer, []
        return frames

    def put_back(self, frames: list[dict[str, Any]]) -> None:
        """Frames taken for a write that failed: stored with the ones that follow."""
        self._buffer = frames + self._buffer

    def stored_through(self, frame_seq: int) -> None:
        """The step's closing write stored the frames up to `frame_seq`: they are not written again."""
        self._stored_through = frame_seq

    def __call__(self, frame: FrameHeader) -> None:
        if frame.frame_seq <= self._stored_through:
            return
        self._buffer.append(frame.model_dump(mode="json"))
        due = time.monotonic() - self._written_at >= self.SECONDS
        if len(self._buffer) >= self.BATCH or due or getattr(frame, "type", "") in self._kept_before_tools:
            frames, self._buffer = self._buffer, []
            self._written_at = time.monotonic()
            self._store_while_running(frames)

    def _store_while_running(self, frames: list[dict[str, Any]]) -> None:
        """Frames of a run another process closed (this one outlived its lease) are never written over
        that run's own: RunEndedElsewhere stops the emitter (the recorder is its first sink)."""
        if self._closed_here:  # this process closed it bare (the fallback): its last frames follow
            self._store.append_frames(self._run_id, frames, self.expires_at())
        elif not self._store.append_running_frames(self._run_id, frames, self.expires_at()):
            raise RunEndedElsewhere(self._run_id)

    def closed_here(self) -> None:
        """This process closed the run without its frames (the fallback close): they are kept after it."""
        self._closed_here = True

"""The push of a run's frames to its session's WebSocket connections, through the management API (the
worker's frame sink; apart from the WebSocket routes, so that the worker imports none of them)."""

from __future__ import annotations

import json
import time
from typing import Any

from botocore.exceptions import ClientError

from ..models import FrameHeader
from ..pipeline import RiverBeam
from . import runtime

# how long a worker trusts its list of a session's connections before reading it again
CONNECTIONS_REFRESH_SECONDS = 1.0
# API Gateway's largest WebSocket message (128 KB), less room for its own framing
MAX_PUSH_BYTES = 127_000


def pushed_form(frame: FrameHeader) -> bytes:
    """The frame as pushed: whole, or where it is over MAX_PUSH_BYTES (a large tool output, a long reply's
    `done`), its type and ids with `truncated: true` and its size: the client reads it whole from the run's
    stored frames (GET /runs/{run_id}/frames?after=<frame_seq - 1>)."""
    data = frame.model_dump_json().encode()
    if len(data) <= MAX_PUSH_BYTES:
        return data
    header = frame.model_dump(include={"session_id", "interaction_id", "run_id", "frame_seq"})
    kind = getattr(frame, "type", "")
    return json.dumps({"type": kind, **header, "truncated": True, "size": len(data)}).encode()


class WebSocketPusher:
    """A frame sink: posts each frame to every connection of its session. A connection that is gone
    (GoneException) is forgotten; no other connection, and never the run, suffers for it."""

    def __init__(self, beam: RiverBeam, client: Any) -> None:
        self._beam = beam
        self._client = client
        self._connections: dict[str, tuple[float, list[str]]] = {}
        self.pushed = 0
        self.gone = 0

    def _targets(self, session_id: str) -> list[str]:
        read_at, ids = self._connections.get(session_id, (0.0, []))
        if time.monotonic() - read_at > CONNECTIONS_REFRESH_SECONDS:
            ids = self._beam.connections(session_id)
            self._connections[session_id] = (time.monotonic(), ids)
        return ids

    def __call__(self, frame: FrameHeader) -> None:
        data = pushed_form(frame)
        try:
            targets = self._targets(frame.session_id)
        except Exception:
            runtime.logger.exception("the session's connections could not be read")
            return
        for connection_id in list(targets):
            try:
                self._client.post_to_connection(ConnectionId=connection_id, Data=data)
                self.pushed += 1
            except ClientError as error:
                if error.response.get("Error", {}).get("Code") == "GoneException":
                    self._forget(frame.session_id, connection_id)
                else:
                    runtime.logger.warning(
                        "a frame was not pushed", extra={"connection_id": connection_id, "error": str(error)}
                    )
            except Exception:
                runtime.logger.exception("a frame was not pushed", extra={"connection_id": connection_id})

    def _forget(self, session_id: str, connection_id: str) -> None:
        self.gone += 1
        runtime.logger.info("connection gone", extra={"connection_id": connection_id})
        _, ids = self._connections.get(session_id, (0.0, []))
        if connection_id in ids:
            ids.remove(connection_id)
        try:
            self._beam.forget_connection(connection_id)
        except Exception:
            runtime.logger.exception("a gone connection could not be forgotten")

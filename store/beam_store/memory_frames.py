"""InMemoryStore's frames of streamed runs: kept by number with their expiry, read after a frame_seq."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from .records import Run


class FramesInMemory:
    """Mixed into InMemoryStore, whose lock, runs and frames it uses."""

    _lock: threading.Lock
    _runs: dict[str, Run]
    _frames: dict[str, dict[int, tuple[int, str]]]

    def append_frames(self, run_id: str, frames: Sequence[Mapping[str, Any]], expires_at: int) -> None:
        self._put_frames(run_id, frames, expires_at, only_running=False)

    def append_running_frames(
        self, run_id: str, frames: Sequence[Mapping[str, Any]], expires_at: int
    ) -> bool:
        return self._put_frames(run_id, frames, expires_at, only_running=True)

    def _put_frames(
        self, run_id: str, frames: Sequence[Mapping[str, Any]], expires_at: int, *, only_running: bool
    ) -> bool:
        encoded = {int(f["frame_seq"]): (expires_at, json.dumps(f)) for f in frames}
        with self._lock:
            run = self._runs.get(run_id)
            if only_running and (run is None or run.status != "running"):
                return False
            self._frames.setdefault(run_id, {}).update(encoded)
            return True

    def add_frame(self, run_id: str, frame: Mapping[str, Any], expires_at: int) -> bool:
        seq = int(frame["frame_seq"])
        with self._lock:
            kept = self._frames.setdefault(run_id, {})
            if seq in kept and kept[seq][0] > time.time():
                return False
            kept[seq] = (expires_at, json.dumps(frame))
            return True

    def list_frames(
        self, run_id: str, *, after_seq: int = -1, limit: int | None = None
    ) -> list[dict[str, Any]]:
        now = time.time()
        with self._lock:
            kept = sorted(
                (seq, body)
                for seq, (exp, body) in self._frames.get(run_id, {}).items()
                if seq > after_seq and exp > now
            )
        found = [json.loads(body) for _, body in kept]
        return found if limit is None else found[: max(limit, 0)]

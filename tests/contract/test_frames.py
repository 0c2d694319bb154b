"""`append_frames` and `list_frames`: a run's frames kept in order until they expire. Run on every store
(the `store` fixture of tests/conftest.py)."""

from __future__ import annotations

import time

from beam_store import (
    BeamStore,
)

from tests.support import steps
from tests.support.contract import sid


def test_frames_are_kept_in_order_and_read_after_a_cursor(store: BeamStore) -> None:
    run_id = sid()
    later = int(time.time()) + 3600
    frames = [
        {"type": "text_delta", "run_id": run_id, "frame_seq": n, "text": f"é{n}", "x": 0.5} for n in range(30)
    ]
    store.append_frames(run_id, frames[:27], later)
    store.append_frames(run_id, frames[27:], later)
    store.append_frames(run_id, frames[5:6], later)  # a frame written twice is kept once
    assert store.list_frames(run_id) == frames
    assert [f["frame_seq"] for f in store.list_frames(run_id, after_seq=26)] == [27, 28, 29]
    assert [f["frame_seq"] for f in store.list_frames(run_id, after_seq=3, limit=2)] == [4, 5]
    assert store.list_frames(run_id, after_seq=29) == []
    assert store.list_frames(sid()) == []
    assert store.get_run(run_id) is None  # frames are not a run


def test_expired_frames_are_not_read(store: BeamStore) -> None:
    run_id = sid()
    store.append_frames(run_id, [{"type": "done", "frame_seq": 0}], int(time.time()) - 1)
    assert store.list_frames(run_id) == []


def test_add_frame_keeps_a_frame_only_where_its_number_is_free(store: BeamStore) -> None:
    run_id = sid()
    later = int(time.time()) + 3600
    first = {"type": "action_expired", "run_id": run_id, "frame_seq": 0, "action_id": "a"}
    assert store.add_frame(run_id, first, later)
    assert not store.add_frame(run_id, {**first, "action_id": "b"}, later)  # taken: nothing written
    assert store.add_frame(run_id, {**first, "frame_seq": 1, "action_id": "b"}, later)
    assert [f["action_id"] for f in store.list_frames(run_id)] == ["a", "b"]


def test_add_frame_takes_the_number_of_a_frame_past_its_time(store: BeamStore) -> None:
    run_id = sid()
    store.append_frames(run_id, [{"type": "done", "frame_seq": 0}], int(time.time()) - 1)
    assert store.add_frame(run_id, {"type": "action_expired", "frame_seq": 0}, int(time.time()) + 3600)
    assert store.list_frames(run_id) == [{"type": "action_expired", "frame_seq": 0}]


def test_a_running_runs_frames_are_kept_and_an_ended_runs_are_refused(store: BeamStore) -> None:
    s = steps.session(sid())
    i = steps.interaction(s.session_id)
    step, r = steps.begin(s, i)
    store.commit(step)
    later = int(time.time()) + 3600
    frames = [{"type": "text_delta", "run_id": r.run_id, "frame_seq": n, "text": f"{n}"} for n in range(30)]
    assert store.append_running_frames(r.run_id, frames[:27], later)  # two writes: 25, then 2
    store.commit(steps.close(s, i, r))
    closing = store.list_frames(r.run_id)
    # a worker that outlived its lease, writing over the frames of the run another closed: nothing kept
    late = [{**f, "text": "late"} for f in frames[20:]]
    assert not store.append_running_frames(r.run_id, late, later)
    assert store.list_frames(r.run_id) == closing == frames[:27]
    assert not store.append_running_frames(sid(), frames[:1], later)  # no such run

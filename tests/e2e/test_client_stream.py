"""The clients' frame stream (riverbeam_local.clients.subscription) against a WebSocket server of the test's
own on 127.0.0.1 that drops the connection mid-run: the subscription reconnects, the frames it missed are read
back over HTTP (here a stand-in for GET /runs/{id}/frames), and each frame is shown once, in order."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from riverbeam_local.clients import subscription
from riverbeam_local.clients.client import ApiClient, Json
from riverbeam_local.clients.subscription import Subscription
from websockets.asyncio.server import ServerConnection, serve

pytestmark = pytest.mark.timeout(120)
RUN = "run-1"


def frame(seq: int, kind: str = "text_delta") -> Json:
    body: Json = {"type": kind, "run_id": RUN, "frame_seq": seq, "session_id": "s", "interaction_id": "i"}
    return {**body, "result": {"interrupted": False}} if kind == "done" else {**body, "text": f"t{seq}"}


STORED = [frame(0, "run_started"), frame(1), frame(2), frame(3), frame(4, "done")]


class StoredFrames(ApiClient):
    """The HTTP API's frames route, answered from STORED; counts its calls."""

    calls = 0

    def frames(self, run_id: str, after: int = -1) -> list[Json]:
        self.calls += 1
        return [f for f in STORED if f["run_id"] == run_id and f["frame_seq"] > after]


async def follow_with(script: list[list[Json]], *, hold: bool) -> tuple[list[int], StoredFrames, int]:
    """Serve one list of frames per connection (the connection then closes, or the last one is held
    open), follow the run, and return the frame_seqs seen, the API and the connection count."""
    connections = 0

    async def handler(socket: ServerConnection) -> None:
        nonlocal connections
        sent = script[min(connections, len(script) - 1)]
        connections += 1
        for item in sent:
            await socket.send(json.dumps(item))
        if hold and connections >= len(script):
            await socket.wait_closed()

    async with serve(handler, "127.0.0.1", 0) as server:
        port = server.sockets[0].getsockname()[1]
        api = StoredFrames(f"http://127.0.0.1:{port}", "u1")
        async with Subscription(api, "s") as subscription:
            await asyncio.sleep(0.1)  # frames may come before the run is followed (before its ack)
            seen = [f["frame_seq"] async for f in subscription.follow(RUN)]
    return seen, api, connections


@pytest.fixture(autouse=True)
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(subscription, "IDLE_POLL_SECONDS", 0.3)


def test_a_dropped_connection_is_reconnected_and_the_missed_frames_replayed() -> None:
    # the first connection brings 0 and 1 then drops; 2 and 4 are sent while it is down; the second
    # brings 1 again (a duplicate) and 3
    script = [[frame(0, "run_started"), frame(1)], [frame(1), frame(3)]]
    seen, api, connections = asyncio.run(follow_with(script, hold=True))
    assert seen == [0, 1, 2, 3, 4]
    assert connections == 2
    assert api.calls >= 1


def test_frames_that_came_before_the_run_was_followed_are_kept() -> None:
    seen, api, _ = asyncio.run(follow_with([STORED], hold=True))
    assert seen == [0, 1, 2, 3, 4]
    assert api.calls == 0  # the socket brought everything: nothing read back


def test_a_silent_socket_falls_back_to_the_stored_frames() -> None:
    seen, api, connections = asyncio.run(follow_with([[]], hold=True))
    assert seen == [0, 1, 2, 3, 4]
    assert connections == 1 and api.calls >= 1


def test_out_of_order_frames_are_shown_in_order() -> None:
    shuffled = [STORED[0], STORED[2], STORED[1], STORED[4], STORED[3]]
    seen, _, _ = asyncio.run(follow_with([shuffled], hold=True))
    assert seen == [0, 1, 2, 3, 4]


def test_stored_frames_page_by_page(monkeypatch: pytest.MonkeyPatch) -> None:
    pages: list[dict[str, Any]] = [
        {"frames": STORED[:2], "next_after": 1},
        {"frames": STORED[2:], "next_after": None},
    ]
    asked: list[object] = []

    def request(self: ApiClient, method: str, path: str, body: Json | None = None, **query: object) -> Any:
        asked.append(query.get("after"))
        return pages[len(asked) - 1]

    monkeypatch.setattr(ApiClient, "request", request)
    assert ApiClient("http://127.0.0.1:1", "u1").frames(RUN) == STORED
    assert asked == [-1, 1]


def test_a_frame_pushed_truncated_is_read_whole_from_the_stored_frames_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Too large for one WebSocket message, frame 2 came as its stand-in: the follower reads the stored
    frames at once, not after the socket has been quiet for IDLE_POLL_SECONDS."""
    monkeypatch.setattr(subscription, "IDLE_POLL_SECONDS", 60.0)
    stand_in = {k: v for k, v in frame(2).items() if k != "text"} | {"truncated": True, "size": 200_000}
    pushed = [frame(0, "run_started"), frame(1), stand_in, frame(3), frame(4, "done")]

    async def followed() -> list[Json]:
        async def handler(socket: ServerConnection) -> None:
            for item in pushed:
                await socket.send(json.dumps(item))
            await socket.wait_closed()

        async with serve(handler, "127.0.0.1", 0) as server:
            port = server.sockets[0].getsockname()[1]
            api = StoredFrames(f"http://127.0.0.1:{port}", "u1")
            async with Subscription(api, "s") as subscription:
                return [f async for f in subscription.follow(RUN)]

    seen = asyncio.run(asyncio.wait_for(followed(), 30))
    assert [f["frame_seq"] for f in seen] == [0, 1, 2, 3, 4]
    assert seen[2] == frame(2)  # the stored frame, whole

"""A session's frames (CONTRACT section 4) for the command line tools: one WebSocket subscription that
reconnects after a drop (bounded backoff), and per run the frames in `frame_seq` order, each once, the ones
the socket missed read back over HTTP (`GET /runs/{id}/frames?after=N`)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import InvalidStatus, WebSocketException

from .client import ApiClient, ClientError, Json, Unreachable, refusal, websocket_url

if TYPE_CHECKING:
    from .tokens_file import Token

# reconnect delays: doubled from the first up to the last, then the last again and again
BACKOFF_SECONDS = (0.2, 0.5, 1.0, 2.0, 4.0, 5.0)
CONNECT_TIMEOUT_SECONDS = 30.0
# while a run is followed and the socket brings nothing for this long, the stored frames are read
IDLE_POLL_SECONDS = 2.0
# a followed run whose server cannot be reached (socket and HTTP) for this long is given up
GIVE_UP_SECONDS = 120.0

Notice = Callable[[str], None]


async def open_socket(url: str, token: Token | None = None, http_url: str = "") -> ClientConnection:
    """Connect, or raise `ClientError` in one line (refused subscription: its status and body)."""
    try:
        return await asyncio.wait_for(connect(url, open_timeout=None), CONNECT_TIMEOUT_SECONDS)
    except InvalidStatus as refused:
        body = refused.response.body or b""
        try:
            answer: Any = json.loads(body)
        except ValueError:
            answer = {"message": body.decode("utf-8", "replace")}
        raise refusal(refused.response.status_code, answer, token, http_url or url) from None
    except ConnectionRefusedError:
        raise Unreachable(url.split("?", 1)[0], "Connection refused") from None
    except (OSError, TimeoutError, WebSocketException) as error:
        raise Unreachable(url.split("?", 1)[0], error or "timed out") from None


class Subscription:
    """The session's frames from `ws://.../ws?session_id=...&user_id=...`, kept per run until followed."""

    def __init__(self, api: ApiClient, session_id: str, notice: Notice | None = None) -> None:
        self.api = api
        self.session_id = session_id
        self.notice = notice or (lambda _: None)
        self.epoch = 0  # how many times it connected: a follower replays what a reconnect may have lost
        self.connected = False
        self._runs: dict[str, dict[int, Json]] = {}
        self._events: dict[str, asyncio.Event] = {}  # set when a followed run may have news
        self._truncated: set[str] = set()  # runs with a frame pushed too large to send: read it back now
        self._socket: ClientConnection | None = None
        self._reader: asyncio.Task[None] | None = None

    @property
    def url(self) -> str:
        """The subscription's URL, with the client's token as it is now (a kept one may have been renewed)."""
        api = self.api
        return websocket_url(
            api.url, self.session_id, api.user, api.secret, api.token.text if api.token else None
        )

    async def start(self) -> None:
        """The first connection: a refusal or no server is raised (`ClientError`)."""
        self._socket = await open_socket(self.url, self.api.token, self.api.url)
        self._connected()
        self._reader = asyncio.create_task(self._read())

    async def close(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
        if self._socket is not None:
            await self._socket.close()

    async def __aenter__(self) -> Subscription:
        await self.start()
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    def _connected(self) -> None:
        self.connected = True
        self.epoch += 1
        for event in self._events.values():
            event.set()

    def add(self, frame: Json) -> None:
        run_id, seq = frame.get("run_id"), frame.get("frame_seq")
        if isinstance(run_id, str) and isinstance(seq, int) and "type" in frame:
            if frame.get("truncated") is True:  # too large to push: the stored frame is read instead
                self._truncated.add(run_id)
            else:
                self._runs.setdefault(run_id, {}).setdefault(seq, frame)
            if run_id in self._events:
                self._events[run_id].set()

    async def _read(self) -> None:
        while True:
            assert self._socket is not None
            with contextlib.suppress(WebSocketException, OSError):
                async for message in self._socket:
                    with contextlib.suppress(ValueError):
                        frame = json.loads(message)
                        if isinstance(frame, dict):
                            self.add(frame)
            self.connected = False
            self.notice("connection lost; reconnecting")
            self._socket = await self._reconnect()
            self._connected()
            self.notice("reconnected")

    async def _reconnect(self) -> ClientConnection:
        attempt = 0
        while True:
            await asyncio.sleep(BACKOFF_SECONDS[min(attempt, len(BACKOFF_SECONDS) - 1)])
            attempt += 1
            with contextlib.suppress(ClientError):
                return await open_socket(self.url, self.api.token, self.api.url)

    # ------------------------------------------------------------------ following a run

    async def follow(self, run_id: str, after: int = -1) -> AsyncIterator[Json]:
        """The run's frames after `after`, in order and each once, up to its `done`. The stored frames
        are read after a reconnect, and whenever the run made no progress for `IDLE_POLL_SECONDS` (the
        socket went quiet, or a frame is missing)."""
        frames = self._runs.setdefault(run_id, {})
        changed = self._events.setdefault(run_id, asyncio.Event())
        clock = asyncio.get_running_loop().time
        next_seq, epoch, progress, unreachable_since = after + 1, self.epoch, clock(), None
        try:
            while True:
                changed.clear()
                while next_seq in frames:
                    frame = frames.pop(next_seq)
                    next_seq, progress = next_seq + 1, clock()
                    yield frame
                    if frame["type"] == "done":
                        return
                left = progress + IDLE_POLL_SECONDS - clock()
                if epoch == self.epoch and left > 0 and run_id not in self._truncated:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(changed.wait(), left)
                    continue
                epoch, progress = self.epoch, clock()
                self._truncated.discard(run_id)
                try:
                    if not await asyncio.to_thread(self._replay, run_id, next_seq - 1):
                        return  # the run has ended and has nothing after `next_seq - 1`
                    unreachable_since = None
                except Unreachable:
                    unreachable_since = unreachable_since or progress
                    if progress - unreachable_since > GIVE_UP_SECONDS:
                        raise
        finally:
            self._runs.pop(run_id, None)
            self._events.pop(run_id, None)
            self._truncated.discard(run_id)

    def _replay(self, run_id: str, after: int) -> bool:
        """Take the run's stored frames after `after`; False when there are none and the run has ended
        (a run seen ended has stored every frame: nothing more will come)."""
        stored = self.api.frames(run_id, after)
        for frame in stored:
            self.add(frame)
        return bool(stored) or self.api.get("run", run_id).get("status") == "running"

"""Retries are safe through `riverbeam dev` (the same handlers as deployed): the stack as a child process on
127.0.0.1, real HTTP and WebSocket clients. An invoke and a resume sent again with their request_id get
the first answer, and nothing runs twice."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from riverbeam_local.clients.dev_process import DevProcess, running
from websockets.asyncio.client import ClientConnection, connect

from tests.support.agents import invoke_body, resume_body
from tests.support.devstack import http, secret_of

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

# far above a normal run (about a second per run), for a loaded CI machine
TIMEOUT_SECONDS = 60.0


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevProcess]:
    with running(tmp_path_factory.mktemp("dev")) as process:
        yield process


class Socket:
    """A subscriber's connection: the frames it received, and the answers to what it sent, apart."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws, self.frames, self.answers = ws, [], []  # type: ignore[var-annotated]

    async def _receive(self) -> None:
        message = json.loads(await asyncio.wait_for(self.ws.recv(), TIMEOUT_SECONDS))
        (self.frames if "type" in message else self.answers).append(message)

    async def until(self, done: Any) -> None:
        deadline = time.monotonic() + TIMEOUT_SECONDS
        while not done():
            assert time.monotonic() < deadline, (self.frames, self.answers)
            await self._receive()

    async def done_of(self, run_id: str) -> dict[str, Any]:
        def ended() -> bool:
            return any(f["run_id"] == run_id and f["type"] == "done" for f in self.frames)

        await self.until(ended)
        return next(f for f in self.frames if f["run_id"] == run_id and f["type"] == "done")

    async def answer_to(self, request: dict[str, Any]) -> dict[str, Any]:
        await self.ws.send(json.dumps(request))
        seen = len(self.answers)
        await self.until(lambda: len(self.answers) > seen)
        return self.answers[seen]  # type: ignore[no-any-return]


def post(dev: DevProcess, route: str, body: dict[str, Any]) -> tuple[int, Any]:
    return http(dev, "POST", route, body)


def messages(dev: DevProcess, session_id: str) -> list[dict[str, Any]]:
    status, page = http(dev, "GET", f"/sessions/{session_id}/messages?user_id=u1")
    assert status == 200, page
    return page["messages"]  # type: ignore[no-any-return]


def test_an_invoke_and_a_resume_sent_again_run_once(dev: DevProcess) -> None:
    session_id = str(uuid.uuid4())
    url = f"{dev.websocket_url}?session_id={session_id}&user_id=u1&secret={secret_of(dev)}"

    async def scenario() -> tuple[Socket, list[Any]]:
        async with await asyncio.wait_for(connect(url, open_timeout=None), TIMEOUT_SECONDS) as ws:
            socket = Socket(ws)
            asked = invoke_body(session_id, request_id=str(uuid.uuid4()), stream=True)
            acks = [post(dev, "/invoke", asked), post(dev, "/invoke", asked)]
            done = await socket.done_of(acks[0][1]["run_id"])
            resume = resume_body(done["result"], request_id=str(uuid.uuid4()))
            acks += [post(dev, "/resume", resume)]
            over_socket = {"action": "resume", **{k: v for k, v in resume.items() if k != "auth_context"}}
            acks += [(202, await socket.answer_to(over_socket))]
            await socket.done_of(acks[2][1]["run_id"])
            acks += [post(dev, "/resume", resume), post(dev, "/invoke", asked)]  # after both ended
            # a new request: the session's queue runs what is before it first, so a run a retry had
            # started would show its frames before this one's `done`
            hello = post(
                dev,
                "/invoke",
                invoke_body(session_id, text="Hello", request_id=str(uuid.uuid4()), stream=True),
            )
            await socket.done_of(hello[1]["run_id"])
            return socket, [*acks, hello]

    socket, answers = asyncio.run(scenario())
    invoked, invoked_again, resumed, resumed_by_socket, resumed_later, invoked_later, hello = answers
    assert invoked[0] == 202 and invoked_again == invoked_later == invoked
    assert resumed[0] == 202 and resumed_by_socket == resumed_later == resumed
    runs = [f["run_id"] for f in socket.frames if f["type"] == "run_started"]
    assert runs == [invoked[1]["run_id"], resumed[1]["run_id"], hello[1]["run_id"]]
    assert [f["name"] for f in socket.frames if f["type"] == "tool_result"] == ["git_push"]
    roles = [m["role"] for m in messages(dev, session_id)]
    assert roles == ["human", "ai", "human", "tool", "ai", "human", "ai"]


def test_a_non_streamed_invoke_sent_again_and_a_reused_request_id(dev: DevProcess) -> None:
    body = invoke_body(str(uuid.uuid4()), request_id=str(uuid.uuid4()), stream=False)
    first, again = post(dev, "/invoke", body), post(dev, "/invoke", body)
    assert first[0] == 200 and again == first and first[1]["interrupted"] is True
    status, refused = post(dev, "/invoke", {**body, "content": [{"type": "text", "text": "Push main"}]})
    assert status == 409 and refused["error"]["code"] == "BEM-043"
    assert [m["role"] for m in messages(dev, body["session_id"])] == ["human", "ai"]

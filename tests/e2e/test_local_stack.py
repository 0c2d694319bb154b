"""`riverbeam dev` end to end: the stack as a child process on 127.0.0.1, a real WebSocket client, HTTP
requests, and git to see what reached the bare remote."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from riverbeam_local.clients.dev_process import DevProcess, running, start
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import InvalidStatus

from tests.support.devstack import http, secret_of

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

# far above a normal run (about a second per run), for a loaded CI machine
FRAME_TIMEOUT_SECONDS = 60.0
HTTP_TIMEOUT_SECONDS = 60.0


# ---------------------------------------------------------------------------- helpers


def invoke(dev: DevProcess, session_id: str, text: str, user: str = "u1") -> dict[str, Any]:
    status, ack = http(
        dev,
        "POST",
        "/invoke",
        {
            "agent_name": "author",
            "session_id": session_id,
            "content": [{"type": "text", "text": text}],
            "stream": True,
            "auth_context": {"user_id": user},
        },
    )
    assert status == 202, ack
    assert ack["stream"] == "websocket"
    return ack  # type: ignore[no-any-return]


def resume(dev: DevProcess, done: dict[str, Any], status: str, **extra: Any) -> dict[str, Any]:
    result = done["result"]
    (action,) = result["action_required"]
    code, ack = http(
        dev,
        "POST",
        "/resume",
        {
            "agent_name": "author",
            "session_id": result["session_id"],
            "interaction_id": result["interaction_id"],
            "actions": [
                {
                    "action_id": action["action_id"],
                    "kind": "confirmation",
                    "request_id": str(uuid.uuid4()),
                    "status": status,
                    "payload": {"tool": action["tool"], "args": action["args"]},
                    **extra,
                }
            ],
            "auth_context": {"user_id": "u1"},
        },
    )
    assert code == 202, ack
    return ack  # type: ignore[no-any-return]


async def subscribe(dev: DevProcess, session_id: str, user: str = "u1") -> ClientConnection:
    url = f"{dev.websocket_url}?session_id={session_id}&user_id={user}&secret={secret_of(dev)}"
    return await asyncio.wait_for(connect(url, open_timeout=None), HTTP_TIMEOUT_SECONDS)


async def frames_of(ws: ClientConnection, run_id: str) -> list[dict[str, Any]]:
    """The run's frames as they arrive, up to its `done` (bounded in time)."""
    frames: list[dict[str, Any]] = []
    deadline = time.monotonic() + FRAME_TIMEOUT_SECONDS
    while True:
        left = deadline - time.monotonic()
        assert left > 0, f"no done frame for run {run_id} after {frames}"
        frame = json.loads(await asyncio.wait_for(ws.recv(), left))
        if frame.get("run_id") != run_id:
            continue
        frames.append(frame)
        if frame["type"] == "done":
            return frames


def assert_in_order(frames: list[dict[str, Any]]) -> None:
    assert [f["frame_seq"] for f in frames] == list(range(len(frames)))
    assert frames[0]["type"] == "run_started"
    assert [f["type"] for f in frames].count("done") == 1


def remote_refs(data_dir: Path) -> dict[str, str]:
    out = subprocess.run(
        ["git", "-C", str(data_dir / "remote.git"), "for-each-ref", "--format=%(refname) %(objectname)"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    return dict(line.split(" ", 1) for line in out.splitlines())


def work_commit(data_dir: Path, ref: str) -> str:
    return subprocess.run(
        ["git", "-C", str(data_dir / "work"), "rev-parse", f"refs/heads/{ref}"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.strip()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def assert_no_traceback(dev: DevProcess) -> None:
    assert "Traceback" not in dev.stderr_text(), dev.stderr_text()


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevProcess]:
    with running(tmp_path_factory.mktemp("dev")) as process:
        yield process


# ---------------------------------------------------------------------------- the approval loop


def test_urls_are_printed_each_on_its_own_line(dev: DevProcess) -> None:
    assert dev.http_url.startswith("http://127.0.0.1:")
    port = dev.http_url.rsplit(":", 1)[1]
    assert dev.websocket_url == f"ws://127.0.0.1:{port}/ws"
    assert dev.urls["Management API"] == f"http://127.0.0.1:{port}/@connections/{{id}}"
    assert dev.urls["Data dir"] == str(dev.data_dir)
    # the work tree has a commit on main and on docs/update; the bare remote starts empty
    assert work_commit(dev.data_dir, "main") != work_commit(dev.data_dir, "docs/update")


def test_approved_push_reaches_the_remote(dev: DevProcess) -> None:
    session_id = str(uuid.uuid4())

    async def scenario() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        async with await subscribe(dev, session_id) as ws:
            ack = invoke(dev, session_id, "Push docs/update")
            first = await frames_of(ws, ack["run_id"])
            second_ack = resume(dev, first[-1], "submitted")
            assert second_ack["interaction_id"] == ack["interaction_id"]
            return first, await frames_of(ws, second_ack["run_id"])

    first, second = asyncio.run(scenario())
    assert_in_order(first)
    result = first[-1]["result"]
    assert result["interrupted"] is True
    (action,) = result["action_required"]
    assert (action["tool"], action["args"]) == ("git_push", {"ref": "docs/update"})
    assert_in_order(second)
    assert second[-1]["result"]["interrupted"] is False
    (outcome,) = [f for f in second if f["type"] == "tool_result"]
    assert (outcome["name"], outcome["status"]) == ("git_push", "ok"), outcome
    assert remote_refs(dev.data_dir)["refs/heads/docs/update"] == work_commit(dev.data_dir, "docs/update")
    # a late subscriber misses nothing: the first run's frames, read back over HTTP
    status, page = http(dev, "GET", f"/runs/{first[0]['run_id']}/frames?user_id=u1")
    assert status == 200, page
    assert page["frames"] == first
    status, page = http(dev, "GET", f"/runs/{first[0]['run_id']}/frames?user_id=u1&after=1")
    assert [f["frame_seq"] for f in page["frames"]] == [f["frame_seq"] for f in first[2:]]
    assert_no_traceback(dev)


def test_cancelled_push_leaves_the_remote_unchanged(dev: DevProcess) -> None:
    session_id = str(uuid.uuid4())
    before = remote_refs(dev.data_dir)

    async def scenario() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        async with await subscribe(dev, session_id) as ws:
            ack = invoke(dev, session_id, "Push main")
            first = await frames_of(ws, ack["run_id"])
            second_ack = resume(dev, first[-1], "cancelled", reason="not before the release")
            return first, await frames_of(ws, second_ack["run_id"])

    first, second = asyncio.run(scenario())
    assert_in_order(first)
    assert first[-1]["result"]["interrupted"] is True
    (action,) = first[-1]["result"]["action_required"]
    assert action["args"] == {"ref": "main"}
    assert_in_order(second)
    assert second[-1]["result"]["interrupted"] is False
    assert not [f for f in second if f["type"] == "tool_result" and f["status"] == "ok"]
    status, stored = http(dev, "GET", f"/actions/{action['action_id']}?user_id=u1")
    assert status == 200 and stored["status"] == "cancelled", stored
    assert remote_refs(dev.data_dir) == before
    assert "refs/heads/main" not in before
    status, session = http(dev, "GET", f"/sessions/{session_id}?user_id=u1")
    assert status == 200 and session["user_id"] == "u1"


def test_another_users_subscription_is_refused(dev: DevProcess) -> None:
    session_id = str(uuid.uuid4())

    async def scenario() -> int:
        async with await subscribe(dev, session_id, user="owner"):
            with pytest.raises(InvalidStatus) as refused:
                await subscribe(dev, session_id, user="intruder")
            return refused.value.response.status_code

    assert asyncio.run(scenario()) == 403


def test_a_closed_subscriber_does_not_disturb_the_other(dev: DevProcess) -> None:
    session_id = str(uuid.uuid4())

    async def scenario() -> list[dict[str, Any]]:
        stays = await subscribe(dev, session_id)
        leaves = await subscribe(dev, session_id)
        try:
            ack = invoke(dev, session_id, "Push docs/update")
            # the first frame, then it goes away mid-run
            await asyncio.wait_for(leaves.recv(), FRAME_TIMEOUT_SECONDS)
            await leaves.close()
            return await frames_of(stays, ack["run_id"])
        finally:
            await stays.close()

    frames = asyncio.run(scenario())
    assert_in_order(frames)
    assert frames[-1]["result"]["interrupted"] is True
    assert_no_traceback(dev)


def test_management_api_answers_gone_for_an_unknown_connection(dev: DevProcess) -> None:
    client = boto3.client(
        "apigatewaymanagementapi",
        endpoint_url=dev.http_url,
        region_name="us-east-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
    )
    with pytest.raises(ClientError) as gone:
        # an id as API Gateway could make it, with `/`, `+` and `=` to encode
        client.post_to_connection(ConnectionId="bm90/YS1j+b25uZWN0aW9u==", Data=b"{}")
    assert gone.value.response["Error"]["Code"] == "GoneException"


def test_websocket_routes_answer_on_the_connection(dev: DevProcess) -> None:
    session_id = str(uuid.uuid4())

    async def scenario() -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]]:
        async with await subscribe(dev, session_id) as ws:
            await ws.send(json.dumps({"action": "no-such-route"}))
            unrouted = json.loads(await asyncio.wait_for(ws.recv(), FRAME_TIMEOUT_SECONDS))
            request = {
                "action": "invoke",
                "agent_name": "author",
                "session_id": session_id,
                "content": [{"type": "text", "text": "Hello"}],
            }
            await ws.send(json.dumps(request))
            ack = json.loads(await asyncio.wait_for(ws.recv(), FRAME_TIMEOUT_SECONDS))
            return unrouted, ack, await frames_of(ws, ack["run_id"])

    unrouted, ack, frames = asyncio.run(scenario())
    assert unrouted["message"] == "Forbidden"
    assert ack["stream"] == "websocket"
    assert_in_order(frames)
    assert frames[-1]["result"]["interrupted"] is False


def test_an_unknown_route_is_404_bem010(dev: DevProcess) -> None:
    # the template's $default route: the records function answers what no other route takes
    for method, path in [("GET", "/no/such/route"), ("POST", "/sessions/x"), ("DELETE", "/invoke")]:
        status, body = http(dev, method, path)
        assert (status, body["error"]["code"]) == (404, "BEM-010"), body
        assert body["error"]["message"] == f"no route {method} {path}"
    status, document = http(dev, "GET", "/openapi.json")
    assert status == 200 and "/invoke" in document["paths"]


# ---------------------------------------------------------------------------- start and stop


def test_records_survive_a_restart_and_sigterm_or_ctrl_c_stop_cleanly(tmp_path: Path) -> None:
    session_id = str(uuid.uuid4())
    first = start(tmp_path)
    try:

        async def scenario() -> list[dict[str, Any]]:
            async with await subscribe(first, session_id) as ws:
                return await frames_of(ws, invoke(first, session_id, "Push docs/update")["run_id"])

        frames = asyncio.run(scenario())
    finally:
        code = first.stop()
    assert code == 0
    assert_no_traceback(first)
    assert (tmp_path / "records.json").is_file()

    second = start(tmp_path)
    try:
        status, session = http(second, "GET", f"/sessions/{session_id}?user_id=u1")
        assert status == 200, session
        assert session["user_id"] == "u1"
        status, page = http(second, "GET", f"/runs/{frames[0]['run_id']}/frames?user_id=u1")
        assert page["frames"] == frames

        # the action asked for before the restart can still be approved after it
        async def approve() -> list[dict[str, Any]]:
            async with await subscribe(second, session_id) as ws:
                return await frames_of(ws, resume(second, frames[-1], "submitted")["run_id"])

        assert asyncio.run(approve())[-1]["result"]["interrupted"] is False
    finally:
        code = second.stop(sig=signal.SIGINT)  # Ctrl-C
    assert code == 0
    assert_no_traceback(second)


def test_a_port_in_use_is_one_line_and_exit_2(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, err = _run_to_end(tmp_path, "--port", str(port))
    assert code == 2
    assert err.strip().count("\n") == 0 and f"port {port}" in err, err


def test_a_data_dir_that_is_a_file_is_one_line_and_exit_2(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a directory")
    code, err = _run_to_end(tmp_path / "file", "--port", str(free_port()))
    assert code == 2
    assert err.strip().count("\n") == 0 and "is a file" in err, err


def _run_to_end(data_dir: Path, *args: str) -> tuple[int, str]:
    done = subprocess.run(
        [sys.executable, "-m", "riverbeam_local", "dev", "--data-dir", str(data_dir), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done.returncode, done.stderr


def test_an_external_dynamodb_gets_the_table(tmp_path: Path, dynamodb_url: str) -> None:
    session_id = str(uuid.uuid4())
    with running(tmp_path, env={"AWS_ENDPOINT_URL_DYNAMODB": dynamodb_url}) as dev:
        assert dev.urls["DynamoDB"] == dynamodb_url
        assert dev.urls["SQS"].endswith("(embedded)")
        status, result = http(
            dev,
            "POST",
            "/invoke",
            {
                "agent_name": "author",
                "session_id": session_id,
                "content": [{"type": "text", "text": "Hello"}],
                "auth_context": {"user_id": "u1"},
            },
        )
        assert status == 200 and result["interrupted"] is False, result
    client = boto3.client(
        "dynamodb",
        endpoint_url=dynamodb_url,
        region_name="us-east-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
    )
    item = client.get_item(
        TableName="riverbeam-local", Key={"pk": {"S": f"SESSION#{session_id}"}, "sk": {"S": "SESSION"}}
    )
    assert item["Item"]["user_id"] == {"S": "u1"}


def test_the_agents_file_is_the_stacks(tmp_path: Path) -> None:
    agents = tmp_path / "agents.yaml"
    agents.write_text("agents:\n  reader:\n    tools: [list_files, read_file]\n")
    with running(tmp_path / "data", args=("--agents", str(agents))) as dev:
        body = {
            "agent_name": "reader",
            "session_id": str(uuid.uuid4()),
            "content": [{"type": "text", "text": "Hello"}],
            "auth_context": {"user_id": "u1"},
        }
        status, result = http(dev, "POST", "/invoke", body)
    assert status == 200 and result["content"][0]["text"], result


@pytest.mark.parametrize("content", [None, "agents:\n  a:\n    tools: [rm_rf]\n"])
def test_a_missing_or_wrong_agents_file_is_one_line_and_exit_2(tmp_path: Path, content: str | None) -> None:
    agents = tmp_path / "agents.yaml"
    if content is not None:
        agents.write_text(content)
    code, err = _run_to_end(tmp_path / "data", "--port", str(free_port()), "--agents", str(agents))
    assert code == 2
    assert err.strip().count("\n") == 0 and "agents.yaml" in err and "Traceback" not in err, err


# ---------------------------------------------------------------------------- the sweep and the events


async def next_of_type(ws: ClientConnection, kind: str) -> dict[str, Any]:
    """The next frame of type `kind` (bounded in time)."""
    deadline = time.monotonic() + FRAME_TIMEOUT_SECONDS
    while True:
        left = deadline - time.monotonic()
        assert left > 0, f"no {kind} frame"
        frame = json.loads(await asyncio.wait_for(ws.recv(), left))
        if frame["type"] == kind:
            return frame  # type: ignore[no-any-return]


def logged(dev: DevProcess, *patterns: str) -> str:
    """The stack's log once every pattern is in it (bounded in time)."""
    deadline = time.monotonic() + FRAME_TIMEOUT_SECONDS
    while not all(re.search(p, dev.stderr_text()) for p in patterns):
        assert time.monotonic() < deadline, (patterns, dev.stderr_text())
        time.sleep(0.1)
    return dev.stderr_text()


def test_the_sweep_expires_an_unanswered_action_and_the_events_are_logged(tmp_path: Path) -> None:
    """An agent whose actions expire a second after they are asked for, and a stack that sweeps every
    0.2 s: the subscriber gets `action_expired` after `done`, the action is `expired`, its interaction
    closed, and the log has one line per approval event."""
    agents = tmp_path / "agents.yaml"
    agents.write_text("agents:\n  author:\n    tools: [git_push]\n    expires_after: 1\n")
    session_id = str(uuid.uuid4())
    args = ("--agents", str(agents), "--sweep-seconds", "0.2")
    with running(tmp_path / "data", args=args) as dev:

        async def scenario() -> tuple[list[dict[str, Any]], dict[str, Any]]:
            async with await subscribe(dev, session_id) as ws:
                frames = await frames_of(ws, invoke(dev, session_id, "Push docs/update")["run_id"])
                return frames, await next_of_type(ws, "action_expired")

        frames, expired = asyncio.run(scenario())
        (action,) = frames[-1]["result"]["action_required"]
        assert expired["action_id"] == action["action_id"] and expired["run_id"] == frames[-1]["run_id"]
        assert expired["frame_seq"] == frames[-1]["frame_seq"] + 1
        status, stored = http(dev, "GET", f"/actions/{action['action_id']}?user_id=u1")
        assert status == 200 and stored["status"] == "expired", stored
        status, interaction = http(dev, "GET", f"/interactions/{expired['interaction_id']}?user_id=u1")
        assert interaction["status"] == "completed", interaction
        a = action["action_id"]
        log = logged(
            dev,
            # put on the stack's bus by the events function, from the table's stream, each with its id
            f"event Approval Requested action={a} tool=git_push .* id=evt_{a}_requested",
            f"event Approval Expired action={a} tool=git_push .* by=sweep id=evt_{a}_expired",
            f"sweep expired 1 action\\(s\\): {action['action_id']}",
        )
    assert "Traceback" not in log

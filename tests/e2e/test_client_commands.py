"""`riverbeam invoke`, `resume`, `get` and `frames` against `riverbeam dev` as a child process: JSON on
stdout (one document, or one frame a line), the API's error JSON on stderr and exit 1 for a refusal, one line
and exit 1 for a stack that is not there."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from riverbeam_local.clients.dev_process import DevProcess, running

from tests.support.devstack import (
    TIMEOUT_SECONDS,
    assert_none_left,
    free_port,
    http,
    remote_refs,
    riverbeam,
    secret_of,
    work_commit,
)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevProcess]:
    data_dir = tmp_path_factory.mktemp("commands")
    with running(data_dir) as process:
        yield process
    assert_none_left(data_dir)


def run(dev: DevProcess, *args: str, user: str = "u1") -> tuple[int, str, str]:
    done = riverbeam(*args, "--url", dev.http_url, "--user", user, "--secret", secret_of(dev))
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stdout, done.stderr


def frames_of(out: str) -> list[dict[str, Any]]:
    frames = [json.loads(line) for line in out.splitlines()]
    assert [f["frame_seq"] for f in frames] == list(
        range(frames[0]["frame_seq"], frames[-1]["frame_seq"] + 1)
    )
    assert frames[-1]["type"] == "done"
    return frames


def error_of(code: int, err: str) -> dict[str, Any]:
    assert code == 1
    body: dict[str, Any] = json.loads(err)["error"]
    assert set(body) == {"code", "message", "request_id"}, body
    return body


def test_invoke_prints_the_result(dev: DevProcess) -> None:
    session_id = str(uuid.uuid4())
    code, out, err = run(dev, "invoke", "--text", "Hello", "--session", session_id)
    assert code == 0, err
    result = json.loads(out)
    assert (result["session_id"], result["interrupted"]) == (session_id, False)
    assert result["content"][0]["text"].startswith("I can push a branch")


def test_invoke_stream_then_resume_approves_and_pushes(dev: DevProcess) -> None:
    session_id = str(uuid.uuid4())
    code, out, err = run(dev, "invoke", "-t", "Push docs/update", "--session", session_id, "--stream")
    assert code == 0, err
    frames = frames_of(out)
    assert frames[0]["type"] == "run_started" and frames[0]["frame_seq"] == 0
    (action,) = frames[-1]["result"]["action_required"]
    assert (action["tool"], action["args"]) == ("git_push", {"ref": "docs/update"})

    code, out, err = run(dev, "resume", "--approve", action["action_id"])
    assert code == 0, err
    resumed = frames_of(out)
    (outcome,) = [f for f in resumed if f["type"] == "tool_result"]
    assert (outcome["name"], outcome["status"]) == ("git_push", "ok")
    assert remote_refs(dev.data_dir)["refs/heads/docs/update"] == work_commit(dev.data_dir, "docs/update")

    code, out, err = run(dev, "get", "action", action["action_id"])
    assert code == 0, err
    stored = json.loads(out)
    assert (stored["status"], stored["response"]["status"]) == ("resolved", "submitted")
    # a second answer is refused: the API's error JSON on stderr, exit 1
    code, out, err = run(dev, "resume", "--reject", action["action_id"])
    assert error_of(code, err)["code"] == "BEM-066" and out == ""


def test_resume_rejects_with_a_reason(dev: DevProcess) -> None:
    code, out, err = run(dev, "invoke", "-t", "Push main", "--stream")
    assert code == 0, err
    (action,) = frames_of(out)[-1]["result"]["action_required"]
    code, out, err = run(dev, "resume", "--reject", action["action_id"], "--reason", "not before the release")
    assert code == 0, err
    assert frames_of(out)[-1]["result"]["interrupted"] is False
    code, out, err = run(dev, "get", "action", action["action_id"])
    stored = json.loads(out)
    assert stored["status"] == "cancelled"
    assert stored["response"]["reason"] == "not before the release"
    assert "refs/heads/main" not in remote_refs(dev.data_dir)


def test_get_every_kind_and_frames(dev: DevProcess) -> None:
    session_id = str(uuid.uuid4())
    code, out, err = run(dev, "invoke", "-t", "Push docs/update", "--session", session_id, "--stream")
    frames = frames_of(out)
    result = frames[-1]["result"]
    for kind, record_id, key in [
        ("session", session_id, "session_id"),
        ("interaction", result["interaction_id"], "interaction_id"),
        ("run", result["run_id"], "run_id"),
        ("messages", session_id, "session_id"),
    ]:
        code, out, err = run(dev, "get", kind, record_id)
        assert code == 0, err
        assert json.loads(out)[key] == record_id
    code, out, err = run(dev, "get", "messages", session_id)
    assert [m["role"] for m in json.loads(out)["messages"]] == ["human", "ai"]

    code, out, err = run(dev, "frames", result["run_id"])
    assert code == 0, err
    assert [json.loads(line) for line in out.splitlines()] == frames
    code, out, err = run(dev, "frames", result["run_id"], "--after", "1")
    assert [json.loads(line) for line in out.splitlines()] == frames[2:]
    code, out, err = run(dev, "frames", result["run_id"], "--after", "0", "--follow")
    assert code == 0, err
    assert frames_of(out) == frames[1:]
    # past the last frame of an ended run: nothing more will come, it does not wait
    code, out, err = run(dev, "frames", result["run_id"], "--after", str(frames[-1]["frame_seq"]), "--follow")
    assert (code, out) == (0, ""), err


def test_refusals_print_the_error_json_and_exit_1(dev: DevProcess) -> None:
    missing = str(uuid.uuid4())
    for kind, expected in [("session", "BEM-020"), ("run", "BEM-023"), ("action", "BEM-027")]:
        code, out, err = run(dev, "get", kind, missing)
        assert error_of(code, err)["code"] == expected and out == ""
    code, out, err = run(dev, "resume", "--approve", missing)
    assert error_of(code, err)["code"] == "BEM-027"
    code, out, err = run(dev, "invoke", "-t", "Hello", "--agent", "nobody")
    assert error_of(code, err)["code"] == "BEM-021"
    # another user's session: its records are not theirs to read
    code, out, err = run(dev, "invoke", "-t", "Hello")
    session_id = json.loads(out)["session_id"]
    code, out, err = run(dev, "get", "session", session_id, user="intruder")
    assert error_of(code, err)["code"] == "BEM-020"


@pytest.mark.parametrize("args", [["get", "session", "x"], ["invoke", "-t", "Hello", "--stream"]])
def test_a_stack_that_is_not_there_is_one_line_and_exit_1(args: list[str]) -> None:
    done = riverbeam(*args, "--url", f"http://127.0.0.1:{free_port()}")
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert f"riverbeam {args[0]}: cannot reach " in done.stderr and "Connection refused" in done.stderr


# ---------------------------------------------------------------------------- the stack's secret


def found_by(dev: DevProcess, home: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    """`riverbeam get session` of a new session, with only `args` and `env` to find the secret (and a home
    of its own, so nothing of this machine's is found)."""
    session_id = json.loads(run(dev, "invoke", "-t", "Hello")[1])["session_id"]
    done = riverbeam(
        "get",
        "session",
        session_id,
        "--url",
        dev.http_url,
        "--user",
        "u1",
        *args,
        env={"HOME": str(home), **(env or {})},
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stderr if done.returncode else json.loads(done.stdout)["session_id"]


def test_the_clients_find_the_secret_flag_variable_then_default_file(dev: DevProcess, tmp_path: Path) -> None:
    secret = secret_of(dev)
    empty = tmp_path / "empty"
    empty.mkdir()
    code, err = found_by(dev, empty)
    assert error_of(code, err)["code"] == "BEM-033"
    assert found_by(dev, empty, "--secret", secret)[0] == 0
    assert found_by(dev, empty, env={"RIVERBEAM_DEV_SECRET": secret})[0] == 0
    # the flag wins over the variable, the variable over the file
    code, err = found_by(dev, empty, "--secret", "w" * 43, env={"RIVERBEAM_DEV_SECRET": secret})
    assert error_of(code, err)["code"] == "BEM-033"
    # the default data dir (~/.riverbeam/dev) holding the stack's secret file
    home = tmp_path / "home"
    (home / ".riverbeam").mkdir(parents=True)
    (home / ".riverbeam" / "dev").symlink_to(dev.data_dir)
    assert found_by(dev, home)[0] == 0
    code, err = found_by(dev, home, env={"RIVERBEAM_DEV_SECRET": "w" * 43})
    assert error_of(code, err)["code"] == "BEM-033"


def test_follow_on_an_ended_run_prints_its_frames_at_once_without_subscribing(dev: DevProcess) -> None:
    code, out, err = run(dev, "invoke", "-t", "Push docs/update", "--stream")
    frames = frames_of(out)
    connects_before = dev.stderr_text().count("WS $connect")
    code, out, err = run(dev, "frames", frames[-1]["run_id"], "--follow")
    assert (code, frames_of(out)) == (0, frames), err
    # nothing to wait for: no subscription was opened (the stack logs each). A request after the command
    # marks where its log lines end
    marker = f"/runs/{uuid.uuid4()}"
    http(dev, "GET", marker + "?user_id=u1")
    deadline = time.monotonic() + TIMEOUT_SECONDS
    while marker not in dev.stderr_text():
        assert time.monotonic() < deadline, dev.stderr_text()
        time.sleep(0.1)
    assert dev.stderr_text().count("WS $connect") == connects_before

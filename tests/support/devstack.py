"""Helpers for the tests of `riverbeam dev` and its clients (chat, invoke, resume, get, frames, demo): the
stack's secret and HTTP API, the bare remote seen with git, the command line as a child process, and a check
that no process of a data dir is left behind."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pexpect
from riverbeam_local.clients.dev_process import DevProcess, running
from riverbeam_local.stack_secret import secret_in_url

# far above a normal run (a second or two), for a loaded 2-core CI machine
TIMEOUT_SECONDS = 120.0
ANSI = r"(?:\x1b\[[0-9;?]*[A-Za-z])*"


def secret_of(dev: DevProcess) -> str:
    """The stack's secret, from the page's URL it printed."""
    secret = secret_in_url(dev.urls["Inbox page"])
    assert secret, dev.urls
    return secret


def spawn_chat(dev: DevProcess, user: str, session_id: str, columns: int) -> pexpect.spawn[str]:
    """`riverbeam chat` on `dev` in a pseudo-terminal of 50 rows and `columns` columns, in the session
    `session_id` (taken up with --session where it exists, else started with --new-session)."""
    status, _ = http(dev, "GET", f"/sessions/{urllib.parse.quote(session_id, safe='')}?user_id={user}")
    which = "--new-session" if status == 404 else "--session"
    flags = ["--url", dev.http_url, "--secret", secret_of(dev), "--user", user, which, session_id]
    return pexpect.spawn(
        sys.executable,
        ["-m", "riverbeam_local", "chat", *flags],
        env={**os.environ, "TERM": "xterm-256color", "PROMPT_TOOLKIT_NO_CPR": "1"},
        encoding="utf-8",
        timeout=TIMEOUT_SECONDS,
        dimensions=(50, columns),
    )


def http(
    dev: DevProcess,
    method: str,
    path: str,
    body: dict[str, Any] | None = None,
    *,
    headers: dict[str, str | None] | None = None,
) -> tuple[int, Any]:
    """A request to the stack as its clients send it (JSON, the secret as a bearer token) and its answer;
    `headers` adds to those or changes them (None leaves one out)."""
    sent = {"content-type": "application/json", "authorization": f"Bearer {secret_of(dev)}"}
    for name, value in (headers or {}).items():
        sent.pop(name.lower(), None)
        if value is not None:
            sent[name.lower()] = value
    request = urllib.request.Request(
        dev.http_url + path,
        data=None if body is None else json.dumps(body).encode(),
        headers=sent,
        method=method,
    )
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as answer:
            return answer.status, json.loads(answer.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


def aws_env(dev: DevProcess) -> dict[str, str]:
    """What the user's shell exports after sourcing the env file the stack's banner names (`AWS env file:
    <path> (...)`): the stack's key, its region and the embedded endpoints."""
    path = dev.urls["AWS env file"].split(" ", 1)[0]
    shown = subprocess.run(
        ["bash", "-c", '. "$1" && env -0', "bash", path],
        capture_output=True,
        check=True,
        timeout=60,
        env={"PATH": os.environ["PATH"]},
    ).stdout.decode()
    pairs = (entry.partition("=") for entry in shown.split("\0") if entry)
    return {name: value for name, _, value in pairs if name.startswith("AWS_")}


def git(data_dir: Path, repo: str, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(data_dir / repo), *args],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout


def remote_refs(data_dir: Path) -> dict[str, str]:
    out = git(data_dir, "remote.git", "for-each-ref", "--format=%(refname) %(objectname)")
    return dict(line.split(" ", 1) for line in out.splitlines())


def work_commit(data_dir: Path, branch: str) -> str:
    return git(data_dir, "work", "rev-parse", f"refs/heads/{branch}").strip()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def riverbeam(
    *args: str, timeout: float = TIMEOUT_SECONDS, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`riverbeam ARGS` as a person runs it, to its end; `env` adds to the environment."""
    return subprocess.run(
        [sys.executable, "-m", "riverbeam_local", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        env={**os.environ, **(env or {})},
    )


def screen(text: str) -> str:
    """A regex for `text` as a terminal program draws it: colours and cursor moves may come between any
    two characters, and a space may be drawn as a cursor move."""
    parts = []
    for char in text:
        parts.append(r"(?: |\x1b\[\d*C)+" if char == " " else re.escape(char))
    return ANSI.join(parts)


def processes_using(path: Path) -> list[int]:
    """The pids of the processes whose command line names `path` (a data dir)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if str(path).encode() in cmdline:
            found.append(int(entry.name))
    return found


def assert_none_left(path: Path, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while processes_using(path) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert processes_using(path) == [], f"processes left behind for {path}"


def invoke_over_http(dev: DevProcess, session_id: str, text: str, user: str = "u1") -> dict[str, Any]:
    """A message to the `author` as any client sends it (POST /invoke, not streamed): its Result."""
    body = {
        "agent_name": "author",
        "session_id": session_id,
        "content": [{"type": "text", "text": text}],
        "auth_context": {"user_id": user},
    }
    status, result = http(dev, "POST", "/invoke", body)
    assert status == 200, result
    return dict(result)


# git_push asked by its session's owner, to be approved by two of the group ops, never by the owner
TWO_OF_OPS = """
agents:
  author:
    tools: [git_push]
    tool_settings:
      git_push:
        approvers: {groups: [ops]}
        required: 2
        self_approval: false
"""


@contextmanager
def running_with_agents(tmp_path: Path, agents_yaml: str) -> Iterator[DevProcess]:
    """`riverbeam dev --agents` on an agents file of `agents_yaml`, its data dir under `tmp_path`; nothing
    of it left running afterwards."""
    agents = tmp_path / "agents.yaml"
    agents.write_text(agents_yaml, encoding="utf-8")
    data_dir = tmp_path / "data"
    with running(data_dir, args=("--agents", str(agents))) as process:
        yield process
    assert_none_left(data_dir)


def ended_run(dev: DevProcess, run_id: str, owner: str = "u1") -> dict[str, Any]:
    """The run once it is no longer `running` (a resume's run goes on after its StreamAck; the worker runs
    it), read as its owner, polled with a bound in time."""
    deadline = time.monotonic() + TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        status, run = http(dev, "GET", f"/runs/{run_id}?user_id={owner}")
        assert status == 200, run
        if run["status"] != "running":
            return dict(run)
        time.sleep(0.2)
    raise AssertionError(f"run {run_id} still running after {TIMEOUT_SECONDS} s")

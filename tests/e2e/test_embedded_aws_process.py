"""`riverbeam dev`'s embedded AWS services run in a process of their own beside the stack's: it serves the
endpoints the banner prints, and it ends with the stack however the stack ends (stopped, Ctrl-C to the
terminal's process group, or killed), keeping the records written just before in the data dir."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from riverbeam_local.clients.dev_process import DevProcess, start

from tests.support.devstack import TIMEOUT_SECONDS, assert_none_left, http, invoke_over_http

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]


def aws_processes(stack_pid: int) -> list[int]:
    """The stack's children running the embedded AWS services."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            cmdline = (entry / "cmdline").read_bytes()
        except (OSError, IndexError):
            continue
        if int(stat[1]) == stack_pid and b"riverbeam_local.stack.aws_process" in cmdline:
            found.append(int(entry.name))
    return found


def running(pid: int) -> bool:
    """Whether `pid` is a live process (an ended one not yet reaped by its new parent is a zombie)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def listening_ports(pid: int) -> set[int]:
    """The TCP ports `pid` listens on (its sockets' inodes matched in /proc/net/tcp)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        target = os.readlink(fd)
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    ports = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
            ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def a_session(dev: DevProcess) -> str:
    session_id = str(uuid.uuid4())
    invoke_over_http(dev, session_id, "Push docs/update")
    return session_id


def kept(data_dir: Path, session_id: str) -> bool:
    """Whether a new stack on `data_dir` has the session."""
    dev = start(data_dir)
    try:
        status, _ = http(dev, "GET", f"/sessions/{session_id}?user_id=u1")
    finally:
        assert dev.stop() == 0
    return status == 200


def test_the_services_are_a_process_of_their_own_that_stops_with_the_stack(tmp_path: Path) -> None:
    dev = start(tmp_path)
    try:
        (child,) = aws_processes(dev.process.pid)
        port = int(dev.urls["DynamoDB"].split()[0].rsplit(":", 1)[1])
        assert port in listening_ports(child)
        assert port not in listening_ports(dev.process.pid)
        session_id = a_session(dev)
    finally:
        code = dev.stop()
    assert code == 0
    assert_none_left(tmp_path)
    assert kept(tmp_path, session_id)


def test_a_killed_stack_leaves_no_process_and_keeps_its_records(tmp_path: Path) -> None:
    dev = start(tmp_path)
    try:
        (child,) = aws_processes(dev.process.pid)
        session_id = a_session(dev)
    finally:
        dev.process.kill()
        dev.process.wait(timeout=TIMEOUT_SECONDS)
    assert_none_left(tmp_path)  # its stdin closed with the stack: it took its last snapshot and ended
    assert not running(child)
    assert kept(tmp_path, session_id)


def test_ctrl_c_to_the_process_group_stops_the_stack_first_and_keeps_the_records(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "riverbeam_local", "dev", "--port", "0", "--data-dir", str(tmp_path)]
    # a process group of its own, as a terminal's foreground job: Ctrl-C signals each process in it
    stack = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        assert stack.stdout is not None
        urls = {}
        deadline = time.monotonic() + TIMEOUT_SECONDS
        while time.monotonic() < deadline and not (line := stack.stdout.readline()).startswith("Ready"):
            assert line, stack.stderr.read() if stack.stderr else ""
            name, _, value = line.partition(":")
            urls[name.strip()] = value.strip()
        dev = DevProcess(stack, tmp_path, urls=urls)  # type: ignore[arg-type]
        session_id = a_session(dev)
        os.killpg(stack.pid, signal.SIGINT)
        _, err = stack.communicate(timeout=TIMEOUT_SECONDS)
    finally:
        if stack.poll() is None:
            os.killpg(stack.pid, signal.SIGKILL)
            stack.wait(timeout=TIMEOUT_SECONDS)
    assert stack.returncode == 0, err
    assert "Traceback" not in err
    assert_none_left(tmp_path)
    assert kept(tmp_path, session_id)

"""bench/load.py with tiny numbers: it drives `riverbeam dev` over HTTP and WebSocket, reports its figures
with zero errors and zero double runs, and leaves neither the stack nor its data dir behind, at its end or
on Ctrl-C. Its figures are the bench's business; nothing here is timed."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.devstack import TIMEOUT_SECONDS, assert_none_left

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

BENCH = Path(__file__).resolve().parents[2] / "bench" / "load.py"
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "POWERTOOLS_LOG_LEVEL": "WARNING"}


def data_dir_of(out: str) -> Path:
    found = re.search(r"^stack: .*; data dir (\S+)$", out, re.MULTILINE)
    assert found, out
    return Path(found.group(1))


def test_two_sessions_of_one_loop_report_no_error_and_no_double_run() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH), "--sessions", "2", "--loops", "1"],
        capture_output=True,
        text=True,
        timeout=2 * TIMEOUT_SECONDS,
        env=ENV,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    conditions = r"^conditions: \d{4}-\d\d-\d\d \d\d:\d\d UTC, \d+ cores, load average [\d. ]+ .*, Python 3\."
    assert re.search(conditions, out, re.M), out
    assert re.search(r"^loops: 2 of 2 completed in [\d.]+ s: [\d.]+ loops/s$", out, re.M), out
    for name in ("invoke to done", "resume to done"):
        assert re.search(rf"^{name}: p50 \d+ ms, p99 \d+ ms, max \d+ ms$", out, re.M), out
    assert re.search(r"^errors: 0$", out, re.M), out
    assert re.search(r"^double runs: 0 \(in the frames: 0, in the stored messages: 0\)$", out, re.M), out
    data_dir = data_dir_of(out)
    assert_none_left(data_dir)
    assert not data_dir.exists()


def test_ctrl_c_stops_the_stack_and_removes_its_data_dir() -> None:
    bench = subprocess.Popen(
        [sys.executable, str(BENCH), "--sessions", "2", "--loops", "100000"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
        stdin=subprocess.DEVNULL,
    )
    try:
        assert bench.stdout is not None
        lines = []
        for _ in range(10):  # bounded: three lines come before the loops start
            lines.append(bench.stdout.readline())
            if not lines[-1] or lines[-1].startswith("load: "):
                break
        bench.send_signal(signal.SIGINT)
        _, err = bench.communicate(timeout=TIMEOUT_SECONDS)
    finally:
        bench.kill()
        bench.wait(timeout=TIMEOUT_SECONDS)
    assert lines[-1].startswith("load: "), "".join(lines) + err
    assert bench.returncode == 130, err
    assert "load: interrupted; the stack is stopped" in err, err
    data_dir = data_dir_of("".join(lines))
    assert_none_left(data_dir)
    assert not data_dir.exists()

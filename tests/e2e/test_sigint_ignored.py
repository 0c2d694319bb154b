"""Ctrl-C stops `riverbeam demo` (and the stack it started) even where it was started with SIGINT ignored,
as a background job of a non-interactive shell or `nohup` starts it: the command restores SIGINT's
default at start, whatever the disposition it inherited."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.devstack import TIMEOUT_SECONDS, assert_none_left

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # what `cmd &` in a script, or nohup, gives a child


def test_ctrl_c_stops_the_demo_started_with_sigint_ignored(tmp_path: Path) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "riverbeam.cli", "demo", "--data-dir", str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        preexec_fn=_ignore_sigint,
    )
    try:
        assert process.stdout is not None
        for _ in range(1000):  # bounded: the demo prints two lines about the stack before its first ask
            line = process.stdout.readline()
            if not line or line.startswith("you "):
                break
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=TIMEOUT_SECONDS)
    finally:
        process.kill()
        process.wait(timeout=TIMEOUT_SECONDS)
    assert line.startswith("you "), out
    assert process.returncode == 130, err
    assert err.strip() == "riverbeam demo: interrupted", err
    assert_none_left(tmp_path)

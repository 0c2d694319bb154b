"""The README's first command: the demo runs the whole approval loop and pushes only what was approved."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from riverbeam.cli import main


@pytest.mark.parametrize("store", ["memory", "embedded"])
def test_demo_pushes_the_approved_branch_only(
    tmp_path: Path, store: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["demo", "--store", store, "--data-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "remote branches now: ['docs/update']" in out
    assert ": cancelled; outcome: None" in out
    assert "12 ai    message" in out  # every step stored, seq 1..12
    assert (tmp_path / "remote.git").is_dir()


def run_demo(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "riverbeam.cli", "demo", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )


@pytest.mark.parametrize("make", ["a file", "under a file", "in /proc"])
def test_an_unusable_data_dir_is_one_line_and_exit_2(tmp_path: Path, make: str) -> None:
    (tmp_path / "f").write_text("not a dir")
    data_dir = {
        "a file": tmp_path / "f",
        "under a file": tmp_path / "f" / "sub",
        "in /proc": Path("/proc/riverbeam-demo"),
    }[make]
    process = run_demo("--data-dir", str(data_dir))
    out, err = process.communicate(timeout=120)
    assert process.returncode == 2, (out, err)
    assert err.count("\n") == 1 and "Traceback" not in err and str(data_dir) in err, err


def test_ctrl_c_mid_run_is_one_line_and_a_non_zero_exit(tmp_path: Path) -> None:
    process = run_demo("--data-dir", str(tmp_path))
    try:
        assert process.stdout is not None
        for _ in range(1000):  # bounded: the demo prints a few dozen lines before its first invoke
            line = process.stdout.readline()
            if not line or line.startswith("> invoke"):
                break
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=120)
    finally:
        process.kill()
    assert line.startswith("> invoke"), out
    assert process.returncode == 130, err
    assert err.strip() == "riverbeam demo: interrupted", err

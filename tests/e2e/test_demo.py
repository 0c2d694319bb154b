"""The README's first command: the demo runs the whole approval loop through the local stack (`riverbeam dev`
as its child process), pushes only what was approved, and leaves no process behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.devstack import TIMEOUT_SECONDS, assert_none_left, remote_refs, work_commit

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]


def run_demo(*args: str, preexec_fn: Callable[[], None] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "riverbeam_local", "demo", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        preexec_fn=preexec_fn,
    )


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # what `cmd &` in a script, or nohup, gives a child


def test_demo_pushes_the_approved_branch_only_then_runs_on_the_example_policy(tmp_path: Path) -> None:
    process = run_demo("--data-dir", str(tmp_path))
    out, err = process.communicate(timeout=TIMEOUT_SECONDS * 2)
    assert process.returncode == 0, (out, err)
    lines = out.splitlines()
    sha = work_commit(tmp_path, "docs/update")
    assert "you      > Push docs/update" in lines
    assert 'tool     git_push {"ref": "docs/update"} needs approval' in lines
    assert "approved git_push" in lines
    assert any(line.startswith(f"remote   docs/update -> {sha[:7]} ") for line in lines), out
    assert "you      > Push main" in lines
    assert "rejected git_push: not before the release" in lines
    assert "remote   main not pushed (the remote has docs/update)" in lines
    assert "{" not in out.replace('{"ref": ', "")  # one line per event, no dict dumps
    assert "Traceback" not in err, err
    assert remote_refs(tmp_path) == {"refs/heads/docs/update": sha}
    # then on the example policy, a stack of its own: docs/* runs unasked, main asks and is approved
    policy_part = lines[lines.index("stack    stopped") + 1 :]
    assert policy_part[0].startswith("policy   the author again, with an approval policy")
    assert 'tool     git_push {"ref": "docs/update"} runs, allowed by policy docs-unattended' in policy_part
    assert 'tool     git_push {"ref": "main"} needs approval' in policy_part
    assert policy_part.count("approved git_push") == 1
    assert set(remote_refs(tmp_path / "with-policy")) == {"refs/heads/docs/update", "refs/heads/main"}
    assert lines[-1] == "stack    stopped"
    assert_none_left(tmp_path)
    assert_none_left(tmp_path / "with-policy")


@pytest.mark.parametrize("make", ["a file", "under a file", "in /proc"])
def test_an_unusable_data_dir_is_one_line_and_exit_2(tmp_path: Path, make: str) -> None:
    (tmp_path / "f").write_text("not a dir")
    data_dir = {
        "a file": tmp_path / "f",
        "under a file": tmp_path / "f" / "sub",
        "in /proc": Path("/proc/riverbeam-demo"),
    }[make]
    process = run_demo("--data-dir", str(data_dir))
    out, err = process.communicate(timeout=TIMEOUT_SECONDS)
    assert process.returncode == 2, (out, err)
    assert err.count("\n") == 1 and "Traceback" not in err and str(data_dir) in err, err


# started as a background job of a script or under nohup, the demo inherits SIGINT ignored: the command
# restores SIGINT's default at start, so Ctrl-C stops it (and its stack) all the same
@pytest.mark.parametrize("preexec_fn", [None, _ignore_sigint], ids=["sigint-default", "sigint-ignored"])
def test_ctrl_c_mid_run_is_one_line_and_exit_130_and_stops_the_stack(
    tmp_path: Path, preexec_fn: Callable[[], None] | None
) -> None:
    process = run_demo("--data-dir", str(tmp_path), preexec_fn=preexec_fn)
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

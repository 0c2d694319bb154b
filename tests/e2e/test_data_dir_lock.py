"""One `riverbeam dev` per data dir: a second one on the same dir is refused (exit 2, one line naming the
first's pid) and the first goes on serving; a stack killed with SIGKILL leaves its lock file behind, and
the next one starts all the same."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from riverbeam_local.clients.dev_process import running, start

from tests.support.devstack import TIMEOUT_SECONDS, assert_none_left, http, riverbeam

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]


def _second_on(data_dir: Path) -> tuple[int, str]:
    done = riverbeam("dev", "--port", "0", "--data-dir", str(data_dir))
    return done.returncode, done.stderr


def test_a_second_stack_on_the_same_data_dir_is_refused_naming_the_first(tmp_path: Path) -> None:
    with running(tmp_path) as first:
        code, err = _second_on(tmp_path)
        assert code == 2, err
        assert err.count("\n") == 1 and "Traceback" not in err, err
        assert f"pid {first.process.pid}" in err and str(tmp_path) in err, err
        # the first is untouched: it serves, and the lock file still names it
        status, _ = http(first, "GET", "/openapi.json")
        assert status == 200
        assert (tmp_path / "lock").read_text().strip() == str(first.process.pid)
        assert first.process.poll() is None


def test_a_lock_left_by_a_killed_stack_does_not_block_the_next(tmp_path: Path) -> None:
    killed = start(tmp_path)
    try:
        killed.process.send_signal(signal.SIGKILL)
        assert killed.process.wait(timeout=TIMEOUT_SECONDS) == -signal.SIGKILL
    finally:
        killed.stop()
    assert (tmp_path / "lock").read_text().strip() == str(killed.process.pid)  # left behind
    with running(tmp_path) as after:
        assert (tmp_path / "lock").read_text().strip() == str(after.process.pid)
        status, _ = http(after, "GET", "/openapi.json")
        assert status == 200
    assert_none_left(tmp_path)

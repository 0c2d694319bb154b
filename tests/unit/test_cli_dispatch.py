"""The `riverbeam` command of the layer dispatches to the developer tooling (riverbeam_local) only when a
subcommand runs: importing the layer's cli, as the deployed functions may, loads none of it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from riverbeam.cli import COMMANDS, main

TOOLING = ("riverbeam_local", "prompt_toolkit", "rich", "websockets", "uvicorn", "starlette", "pexpect")


def test_the_layers_cli_imports_no_tooling() -> None:
    probe = f"import sys, riverbeam, riverbeam.cli; print([m for m in {TOOLING!r} if m in sys.modules])"
    # on the layer as the tests import it (its python/ folder first)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_help_names_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert all(name in out for name in COMMANDS)
    assert set(COMMANDS) == {"dev", "demo", "chat", "invoke", "resume", "get", "frames"}


@pytest.mark.parametrize("argv", [[], ["no-such-command"]])
def test_no_command_or_an_unknown_one_is_usage_and_exit_2(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as done:
        main(argv)
    assert done.value.code == 2
    assert "usage: riverbeam" in capsys.readouterr().err

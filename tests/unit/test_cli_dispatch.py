"""The `riverbeam` command (riverbeam_local.command) loads a subcommand's libraries only when that subcommand
runs, and nothing deployed (the layer, the functions) imports the tooling at all, not even lazily."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
from riverbeam_local.command import COMMANDS, main

ROOT = Path(__file__).resolve().parents[2]
LIBRARIES = ("prompt_toolkit", "rich", "websockets", "uvicorn", "starlette", "pexpect")


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports, at its top or inside a function."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return names


def test_nothing_deployed_imports_the_tooling() -> None:
    deployed = [*(ROOT / "layers").rglob("*.py"), *(ROOT / "functions").rglob("*.py")]
    assert len(deployed) > 40
    importers = sorted(
        str(path.relative_to(ROOT))
        for path in deployed
        if any(name.split(".")[0] == "riverbeam_local" for name in imported_modules(path))
    )
    assert importers == []


def test_the_command_loads_no_subcommand_library() -> None:
    probe = f"import sys, riverbeam_local.command; print([m for m in {LIBRARIES!r} if m in sys.modules])"
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
    named = {"dev", "demo", "chat", "invoke", "resume", "get", "frames", "trace", "approvals", "policy"}
    named |= {"grants", "revoke", "login"}
    assert set(COMMANDS) == named


def test_no_command_prints_the_whole_help_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    shown = capsys.readouterr()
    assert shown.err.startswith("usage: riverbeam")
    # every command with what it does (its first words: the help wraps to the terminal's width, and puts
    # the words of a long name on the next line)
    described = [rf"^    {name}\s+{re.escape(text[:20])}" for name, text in COMMANDS.items()]
    assert all(re.search(pattern, shown.err, re.MULTILINE) for pattern in described), shown.err
    assert "riverbeam COMMAND --help" in shown.err
    assert shown.out == ""


def test_an_unknown_command_is_usage_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["no-such-command"])
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert "usage: riverbeam" in err and "invalid choice: 'no-such-command'" in err


def test_version_is_the_installed_distributions(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out == f"riverbeam {metadata.version('riverbeam')}\n"


def test_the_installed_command_alone_prints_help() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "riverbeam_local"],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2
    assert "chat      talk to an agent" in done.stderr

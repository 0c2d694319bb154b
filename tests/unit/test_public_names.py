"""`riverbeam`'s public names: each one in __all__ resolves, and the built-in tools and the author's workspace
are reachable from the package itself."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import riverbeam
from riverbeam.agent.config import BUILTIN_TOOLS
from riverbeam.agent.workspace import prepare_workspace


def test_every_public_name_resolves() -> None:
    for name in riverbeam.__all__:
        assert getattr(riverbeam, name) is not None, name


def test_builtin_tools_and_prepare_workspace_are_public(tmp_path: Path) -> None:
    assert riverbeam.BUILTIN_TOOLS is BUILTIN_TOOLS
    assert set(riverbeam.BUILTIN_TOOLS) >= {"git_push", "list_files", "read_file", "git_log"}
    assert riverbeam.prepare_workspace is prepare_workspace
    work_tree, remote = riverbeam.prepare_workspace(tmp_path)
    tools = {name: make(work_tree) for name, make in riverbeam.BUILTIN_TOOLS.items()}
    assert tools["git_push"].name == "git_push" and remote.is_dir()


def test_importing_riverbeam_loads_neither_the_tools_nor_the_workspace() -> None:
    # the names are found on first use, so a records read pays for none of them
    code = "import sys, riverbeam; print(sorted(m for m in sys.modules if m.startswith('riverbeam.')))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "riverbeam.agent.config" not in loaded and "riverbeam.agent.workspace" not in loaded

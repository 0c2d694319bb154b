"""Fixtures the functional tests share."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest


@pytest.fixture
def no_git(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A PATH without git on it (an empty folder): the git tools must need no `git` executable."""
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    assert shutil.which("git") is None

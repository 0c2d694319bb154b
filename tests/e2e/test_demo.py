"""The README's first command: the demo runs the whole approval loop and pushes only what was approved."""

from __future__ import annotations

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

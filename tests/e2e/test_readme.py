"""The README's Python example runs as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest


def test_the_readme_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    example = re.search(r"```python\n(.*?)```", readme, re.S)
    assert example is not None
    exec(compile(example.group(1), "README.md", "exec"), {})
    printed = capsys.readouterr().out
    assert "type='tool_result'" in printed and "status='ok'" in printed and "type='done'" in printed

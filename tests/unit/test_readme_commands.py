"""The README's commands work as written from the checkout's root: each names the virtualenv's tools (a bare
`python` or `pytest` outside the venv lacks the packages)."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"
TOOLS = ("python", "python3", "pytest", "pip", "ruff", "mypy", "riverbeam")


def commands(text: str) -> list[str]:
    """Inline code spans and the lines of indented code blocks."""
    spans = re.findall(r"`([^`\n]+)`", text)
    blocks = [line.strip() for line in text.splitlines() if line.startswith("    ") and line.strip()]
    return spans + blocks


def test_every_command_in_the_readme_runs_from_the_venv() -> None:
    bare = [c for c in commands(README.read_text()) if c.split(" ", 1)[0] in TOOLS and " " in c]
    assert bare == [], f"commands that fail outside the venv (give them as .venv/bin/...): {bare}"

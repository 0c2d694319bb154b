"""The git work tree and bare remote that the built-in `author` agent pushes with."""

from __future__ import annotations

import subprocess
from pathlib import Path

_IDENTITY = [
    "-c",
    "user.name=Riverbeam",
    "-c",
    "user.email=riverbeam@localhost",
    "-c",
    "commit.gpgsign=false",
]


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", *_IDENTITY, *args], cwd=cwd, check=True, capture_output=True, text=True, timeout=60
    )


def prepare_workspace(data_dir: str | Path) -> tuple[Path, Path]:
    """Under `data_dir`: `work/` with a commit on `main` and on `docs/update`, and an empty bare
    `remote.git` as its `origin`. Made on first use, reused after. Returns (work tree, remote)."""
    root = Path(data_dir)
    work, remote = root / "work", root / "remote.git"
    if (work / ".git").exists() and remote.exists():
        return work, remote
    root.mkdir(parents=True, exist_ok=True)
    remote.mkdir(exist_ok=True)
    _git(remote, "init", "--quiet", "--bare", "--initial-branch=main")
    work.mkdir(exist_ok=True)
    _git(work, "init", "--quiet", "--initial-branch=main")
    (work / "README.md").write_text("# Work tree of the Riverbeam author agent\n")
    _git(work, "add", "README.md")
    _git(work, "commit", "--quiet", "-m", "Initial commit")
    _git(work, "checkout", "--quiet", "-b", "docs/update")
    (work / "docs.md").write_text("Updated documentation.\n")
    _git(work, "add", "docs.md")
    _git(work, "commit", "--quiet", "-m", "Update the docs")
    _git(work, "checkout", "--quiet", "main")
    _git(work, "remote", "add", "origin", str(remote.resolve()))
    return work, remote

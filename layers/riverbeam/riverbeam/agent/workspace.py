"""The git work tree and bare remote that the built-in `author` agent pushes with (made with dulwich: no
`git` executable needed)."""

from __future__ import annotations

from pathlib import Path

from ..tools.gitrepo import init_workspace


def prepare_workspace(data_dir: str | Path) -> tuple[Path, Path]:
    """Under `data_dir`: `work/` with a commit on `main` and on `docs/update`, and an empty bare
    `remote.git` as its `origin`. Made on first use, reused after. Returns (work tree, remote)."""
    root = Path(data_dir)
    work, remote = root / "work", root / "remote.git"
    if (work / ".git").exists() and remote.exists():
        return work, remote
    init_workspace(work, remote)
    return work, remote

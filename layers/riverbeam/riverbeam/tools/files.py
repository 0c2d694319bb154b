"""Read-only tools over a work tree: `list_files`, `read_file`, `git_log`. None changes anything, so none
asks for approval; each stays inside its work tree (a path that leaves it, or goes into .git, is refused;
a symlink that leaves it is neither followed nor listed), and none names a server path in its errors. On a
clone, each first brings it up to date with its remote; where that fails, it works on what the clone has and
its result's `warning` says so."""

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import ToolError
from . import Tool, make_tool
from .worktree import WorkTree, as_work_tree

MAX_READ_BYTES = 64 * 1024
MAX_FILES = 1000
MAX_LOG_ENTRIES = 100


def _in_tree(target: Path, root: Path) -> bool:
    """Whether the resolved `target` is in the work tree `root`, and not in its .git."""
    return target.is_relative_to(root) and ".git" not in target.relative_to(root).parts


def _noted(result: dict[str, Any], warning: str | None) -> dict[str, Any]:
    return result if warning is None else {**result, "warning": warning}


def _inside(tree: Path, path: str, tool: str) -> Path:
    target = (tree / path).resolve()
    if not _in_tree(target, tree.resolve()):
        raise ToolError("BEM-332", f"{tool}: {path!r} is outside the work tree")
    return target


def _files_under(base: Path, root: Path) -> Iterator[str]:
    """The files under `base`, relative to `root`: .git left out, a symlinked folder never entered, a
    symlinked file listed only where it ends at a file of the tree."""
    for folder, folders, files in os.walk(base):  # followlinks=False; unreadable folders skipped
        folders[:] = [name for name in folders if name != ".git"]
        for name in files:
            found = Path(folder, name)
            if found.is_symlink() and not _in_tree(found.resolve(), root):
                continue
            if found.is_file():
                yield str(found.relative_to(root))


def list_files_tool(work_tree: str | Path | WorkTree) -> Tool:
    tree = as_work_tree(work_tree)

    def list_files(path: str = ".") -> dict[str, Any]:
        """List the files of the work tree under a directory (relative paths, .git left out)."""
        root, warning = tree.synced()
        base = _inside(root, path, "list_files")
        if not base.is_dir():
            raise ToolError("BEM-332", f"list_files: {path!r} is not a directory")
        found = sorted(_files_under(base, root.resolve()))
        listed = {"path": path, "files": found[:MAX_FILES], "truncated": len(found) > MAX_FILES}
        return _noted(listed, warning)

    return make_tool(list_files)


def read_file_tool(work_tree: str | Path | WorkTree) -> Tool:
    tree = as_work_tree(work_tree)

    def read_file(path: str) -> dict[str, Any]:
        """Read a text file of the work tree (at most 64 KiB of it)."""
        root, warning = tree.synced()
        target = _inside(root, path, "read_file")
        if not target.is_file():
            raise ToolError("BEM-332", f"read_file: {path!r} is not a file")
        try:
            with target.open("rb") as f:
                data = f.read(MAX_READ_BYTES + 1)
        except OSError as error:  # its message would name the server's path
            raise ToolError("BEM-331", f"read_file: {path!r} cannot be read: {error.strerror}") from None
        text = data[:MAX_READ_BYTES].decode("utf-8", errors="replace")
        return _noted({"path": path, "text": text, "truncated": len(data) > MAX_READ_BYTES}, warning)

    return make_tool(read_file)


def git_log_tool(work_tree: str | Path | WorkTree) -> Tool:
    tree = as_work_tree(work_tree)

    def git_log(ref: str = "HEAD", limit: int = 10) -> dict[str, Any]:
        """Show the latest commits of a branch of the work tree (newest first)."""
        from .gitrepo import log, opened, resolve, valid_revision  # dulwich: loaded by the first use

        if not valid_revision(ref):
            raise ToolError("BEM-332", f"git_log: {ref!r} is not a valid ref")
        root, warning = tree.synced()
        with opened(root) as repo:
            head = resolve(repo, ref)
            if head is None:
                raise ToolError(
                    "BEM-331", f"git log failed: {ref!r} is no branch, tag or commit of the work tree"
                )
            commits = log(repo, head, max(1, min(limit, MAX_LOG_ENTRIES)))
        return _noted({"ref": ref, "commits": commits}, warning)

    return make_tool(git_log)


def read_only_tools(work_tree: str | Path | WorkTree) -> list[Tool]:
    return [list_files_tool(work_tree), read_file_tool(work_tree), git_log_tool(work_tree)]

"""Read-only tools over a work tree: `list_files`, `read_file`, `git_log`. None changes anything, so none
asks for approval; each stays inside its work tree (a path that leaves it, or goes into .git, is refused;
a symlink that leaves it is neither followed nor listed), and none names a server path in its errors."""

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import ToolError
from . import Tool, make_tool
from .redact import redacted

MAX_READ_BYTES = 64 * 1024
MAX_FILES = 1000
MAX_LOG_ENTRIES = 100
GIT_TIMEOUT_SECONDS = 60
_FIELD = "\x1f"


def _in_tree(target: Path, root: Path) -> bool:
    """Whether the resolved `target` is in the work tree `root`, and not in its .git."""
    return target.is_relative_to(root) and ".git" not in target.relative_to(root).parts


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


def run_git(tree: Path, *args: str, timeout: float = GIT_TIMEOUT_SECONDS) -> subprocess.CompletedProcess[str]:
    """`git -C tree ARGS`; a git that cannot start or runs out of time is a tool failure (BEM-331) whose
    message names no server path."""
    try:
        return subprocess.run(
            ["git", "-C", str(tree), *args], capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        raise ToolError("BEM-331", f"git {args[0]} took longer than {timeout:g} s") from None
    except OSError as error:
        raise ToolError("BEM-331", f"git {args[0]} could not run: {error.strerror or error}") from None


def _git(tree: Path, *args: str) -> str:
    done = run_git(tree, *args)
    if done.returncode != 0:
        raise ToolError("BEM-331", f"git {args[0]} failed: {redacted(done.stderr.strip(), tree)[:500]}")
    return done.stdout


def list_files_tool(work_tree: str | Path) -> Tool:
    tree = Path(work_tree)

    def list_files(path: str = ".") -> dict[str, Any]:
        """List the files of the work tree under a directory (relative paths, .git left out)."""
        base = _inside(tree, path, "list_files")
        if not base.is_dir():
            raise ToolError("BEM-332", f"list_files: {path!r} is not a directory")
        found = sorted(_files_under(base, tree.resolve()))
        return {"path": path, "files": found[:MAX_FILES], "truncated": len(found) > MAX_FILES}

    return make_tool(list_files)


def read_file_tool(work_tree: str | Path) -> Tool:
    tree = Path(work_tree)

    def read_file(path: str) -> dict[str, Any]:
        """Read a text file of the work tree (at most 64 KiB of it)."""
        target = _inside(tree, path, "read_file")
        if not target.is_file():
            raise ToolError("BEM-332", f"read_file: {path!r} is not a file")
        try:
            with target.open("rb") as f:
                data = f.read(MAX_READ_BYTES + 1)
        except OSError as error:  # its message would name the server's path
            raise ToolError("BEM-331", f"read_file: {path!r} cannot be read: {error.strerror}") from None
        text = data[:MAX_READ_BYTES].decode("utf-8", errors="replace")
        return {"path": path, "text": text, "truncated": len(data) > MAX_READ_BYTES}

    return make_tool(read_file)


def git_log_tool(work_tree: str | Path) -> Tool:
    tree = Path(work_tree)

    def git_log(ref: str = "HEAD", limit: int = 10) -> dict[str, Any]:
        """Show the latest commits of a branch of the work tree (newest first)."""
        checked = run_git(tree, "check-ref-format", "--allow-onelevel", ref)
        if ref.startswith("-") or checked.returncode != 0:
            raise ToolError("BEM-332", f"git_log: {ref!r} is not a valid ref")
        count = max(1, min(limit, MAX_LOG_ENTRIES))
        fields = _FIELD.join(("%H", "%an", "%aI", "%s"))
        out = _git(tree, "log", f"--max-count={count}", f"--format={fields}", ref, "--")
        commits = []
        for line in out.splitlines():
            commit, author, date, subject = line.split(_FIELD, 3)
            commits.append({"commit": commit, "author": author, "date": date, "subject": subject})
        return {"ref": ref, "commits": commits}

    return make_tool(git_log)


def read_only_tools(work_tree: str | Path) -> list[Tool]:
    return [list_files_tool(work_tree), read_file_tool(work_tree), git_log_tool(work_tree)]

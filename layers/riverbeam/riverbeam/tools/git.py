"""`git_push`: pushes a branch of a configured work tree; a rejected push is BEM-330 with the remote's
words (no server path in them: the remote's is `../remote.git` or `.../name`)."""

import subprocess
from pathlib import Path
from typing import Any

from ..errors import ToolError
from . import Tool, make_tool
from .files import run_git
from .redact import redacted

PUSH_TIMEOUT_SECONDS = 120


def _git(work_tree: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_git(work_tree, *args, timeout=PUSH_TIMEOUT_SECONDS)


def _remote_message(stderr: str) -> str:
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    remote = [line for line in lines if line.startswith(("remote:", "!", "error:"))]
    return "\n".join(remote or lines)[:2000] or "the remote refused the push"


def git_push_tool(work_tree: str | Path, *, remote: str = "origin") -> Tool:
    """The confirm-required `git_push(ref)` tool, pushing `ref` of `work_tree` to `remote`."""
    tree = Path(work_tree)

    def git_push(ref: str) -> dict[str, Any]:
        """Push a branch to the remote repository."""
        checked = _git(tree, "check-ref-format", "--branch", ref)
        if ref.startswith("-") or checked.returncode != 0:
            raise ToolError("BEM-332", f"git_push: {ref!r} is not a valid branch name")
        pushed = _git(tree, "push", "--porcelain", remote, f"refs/heads/{ref}:refs/heads/{ref}")
        if pushed.returncode != 0:
            words = redacted(_remote_message(pushed.stderr), tree)
            raise ToolError("BEM-330", f"push of {ref} to {remote} rejected: {words}")
        head = _git(tree, "rev-parse", f"refs/heads/{ref}").stdout.strip()
        summary = redacted(pushed.stdout.strip(), tree)
        return {"ref": ref, "remote": remote, "commit": head, "summary": summary}

    return make_tool(git_push, confirm_required=True)

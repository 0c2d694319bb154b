"""`git_push`: pushes a branch of a configured work tree (dulwich: no `git` executable needed); a rejected
push is BEM-330 with the remote's words, as git prints them (no server path in them: the remote's is
`../remote.git` or `.../name`, a URL's credentials `***`)."""

from pathlib import Path
from typing import Any

from ..errors import ToolError
from . import Tool, make_tool
from .redact import redacted
from .worktree import WorkTree, as_work_tree

MAX_MESSAGE_CHARS = 2000


def git_push_tool(work_tree: str | Path | WorkTree, *, remote: str = "origin") -> Tool:
    """The confirm-required `git_push(ref)` tool, pushing `ref` of `work_tree` to `remote` (a clone's
    work tree: to the remote it was cloned from, with its credentials)."""
    tree = as_work_tree(work_tree)

    def git_push(ref: str) -> dict[str, Any]:
        """Push a branch to the remote repository."""
        from .gitpush import NoSuchBranch, PushRejected, push_branch  # dulwich: loaded by the first push
        from .gitrepo import opened, valid_branch

        if not valid_branch(ref):
            raise ToolError("BEM-332", f"git_push: {ref!r} is not a valid branch name")
        path, _ = tree.synced()  # a fetch that failed: the push tells, in git's words
        with opened(path) as repo:
            location, credentials = tree.push_location(repo, remote)
            try:
                pushed = push_branch(repo, location, ref, credentials=credentials)
            except NoSuchBranch:  # not the remote's refusal: nothing was sent
                raise ToolError(
                    "BEM-330", f"push of {ref} failed: the branch {ref} does not exist (nothing was pushed)"
                ) from None
            except PushRejected as rejected:
                words = redacted("\n".join(rejected.lines), path)[:MAX_MESSAGE_CHARS]
                raise ToolError("BEM-330", f"push of {ref} to {remote} rejected: {words}") from None
        summary = redacted(pushed.summary, path)
        return {"ref": ref, "remote": remote, "commit": pushed.commit, "summary": summary}

    return make_tool(git_push, confirm_required=True)

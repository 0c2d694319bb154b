"""Bringing a clone up to date with its remote, as `git fetch` and then `git merge --ff-only` on each branch
would: the remote's branches are fetched into `refs/remotes/origin/`, a branch the clone lacks is made, and
a branch is moved only where that is a fast-forward of its tip. A branch with commits the remote lacks is
left as it is (its push is refused as non-fast-forward, in git's words), and so is the checked-out branch
while its work tree has local changes; when that branch moves, the work tree's files move with it."""

from __future__ import annotations

from dulwich import porcelain
from dulwich.client import HTTPUnauthorized
from dulwich.diff_tree import tree_changes
from dulwich.graph import can_fast_forward
from dulwich.index import update_working_tree
from dulwich.objects import Commit, ObjectID
from dulwich.refs import HEADREF, Ref
from dulwich.repo import Repo

from .gitpush import remote_client
from .gitrepo import BRANCHES
from .worktree import Credentials

TRACKING = Ref(b"refs/remotes/origin/")
TAGS = Ref(b"refs/tags/")
MAX_REASON_CHARS = 300


class FetchFailed(Exception):
    """The remote could not be fetched; the message is what git would print about it."""


def fetch_and_fast_forward(repo: Repo, url: str, credentials: Credentials | None, timeout: float) -> None:
    """Fetch every branch and tag of `url` into `repo` and fast-forward the branches that can be; a remote
    out of reach or refusing the credentials is FetchFailed in git's words (nothing moved), and so is a
    checked-out branch whose files cannot be written (the other branches moved)."""
    client, path = remote_client(url, credentials, timeout)
    try:
        fetched = client.fetch(path.encode(), repo)
    except HTTPUnauthorized:
        raise FetchFailed(f"fatal: Authentication failed for '{url}'") from None
    except Exception as error:  # dulwich's and urllib3's: the remote cannot be reached, or answers nonsense
        reason = (str(error) or type(error).__name__)[:MAX_REASON_CHARS]
        raise FetchFailed(f"fatal: unable to access '{url}': {reason}") from None
    theirs = {
        Ref(name): sha for name, sha in fetched.refs.items() if sha is not None and not name.endswith(b"^{}")
    }
    current = _checked_out_branch(repo)
    for ref, sha in sorted(theirs.items(), key=lambda item: item[0] == current):  # the checked-out last
        if ref.startswith(BRANCHES):
            repo.refs[Ref(TRACKING + ref[len(BRANCHES) :])] = sha
            _fast_forward(repo, ref, sha, checked_out=ref == current)
        elif ref.startswith(TAGS):
            repo.refs.add_if_new(ref, sha)  # as git fetch: a tag the clone has is never moved


def _checked_out_branch(repo: Repo) -> Ref | None:
    chain, _ = repo.refs.follow(HEADREF)
    return chain[-1] if len(chain) > 1 else None  # None: HEAD is detached


def _fast_forward(repo: Repo, ref: Ref, theirs: ObjectID, *, checked_out: bool) -> None:
    ours = repo.refs.as_dict().get(ref)
    if ours is None:
        repo.refs.add_if_new(ref, theirs)
    elif ours != theirs and can_fast_forward(repo, ours, theirs):
        if not checked_out:
            repo.refs.set_if_equals(ref, ours, theirs)
        elif _clean(repo):
            try:
                _move_work_tree(repo, ours, theirs)
            except Exception as error:  # dulwich's: a path it will not write, a file changed meanwhile
                reason = (str(error) or type(error).__name__)[:MAX_REASON_CHARS]
                raise FetchFailed(f"error: {ref.decode()} could not be fast-forwarded: {reason}") from None
            repo.refs.set_if_equals(ref, ours, theirs)


def _clean(repo: Repo) -> bool:
    """Whether the work tree has nothing staged, changed or untracked (ignored files aside)."""
    status = porcelain.status(repo)
    return not any(status.staged.values()) and not status.unstaged and not status.untracked


def _move_work_tree(repo: Repo, ours: ObjectID, theirs: ObjectID) -> None:
    """The work tree's files and index from `ours`'s tree to `theirs`'s, as a fast-forward merge writes
    them; a file changed meanwhile is refused rather than overwritten."""
    old, new = repo[ours], repo[theirs]
    assert isinstance(old, Commit) and isinstance(new, Commit)
    config = repo.get_config_stack()
    update_working_tree(
        repo,
        old.tree,
        new.tree,
        change_iterator=tree_changes(repo.object_store, old.tree, new.tree),
        blob_normalizer=repo.get_blob_normalizer(config=config, tree=new.tree),
        allow_overwrite_modified=False,
        config=config,
    )

"""The git the built-in tools read and make, on dulwich (pure Python): no `git` executable is needed, so the
tools work where none exists (the Lambda runtime). Ref names are checked as `git check-ref-format` does,
and nothing an option or a refspec would read (`-x`, `+x`, `a:b`) is taken for one."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from dulwich.errors import NotGitRepository
from dulwich.objects import Commit, ObjectID
from dulwich.refs import Ref, check_ref_format
from dulwich.repo import Repo

from ..errors import ToolError

BRANCHES = Ref(b"refs/heads/")
IDENTITY = b"Riverbeam <riverbeam@localhost>"
_HEX_COMMIT = re.compile(r"[0-9a-f]{40}")
# where `git log <name>` looks for a name, in git's order (gitrevisions(7))
_REF_PLACES = ("refs/{}", "refs/tags/{}", "refs/heads/{}", "refs/remotes/{}", "refs/remotes/{}/HEAD")


def _well_formed(name: str) -> bool:
    if not name or name.startswith(("-", "+")):  # an option, or a forced refspec
        return False
    try:
        encoded = name.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate
        return False
    return check_ref_format(Ref(BRANCHES + encoded))


def valid_branch(name: str) -> bool:
    """Whether `name` is a branch name (`git check-ref-format --branch`), and not an option or refspec."""
    return name != "HEAD" and _well_formed(name)


def valid_revision(name: str) -> bool:
    """Whether `name` may name a commit for the log: HEAD, a ref name (one level allowed) or a commit id."""
    return name == "HEAD" or _well_formed(name)


@contextmanager
def opened(work_tree: Path) -> Iterator[Repo]:
    """The repository of `work_tree`; one that is missing is a tool failure naming no server path."""
    try:
        repo = Repo(str(work_tree))
    except (NotGitRepository, OSError):
        raise ToolError("BEM-331", "the work tree is not a git repository") from None
    with repo:
        yield repo


def resolve(repo: Repo, name: str) -> bytes | None:
    """The commit id `name` stands for, looked up as `git log` would; None when it names none."""
    candidates = [name] if name == "HEAD" else [place.format(name) for place in _REF_PLACES]
    for candidate in candidates:
        found = _followed(repo, candidate)
        if found is not None:
            return found
    if _HEX_COMMIT.fullmatch(name) and ObjectID(name.encode()) in repo.object_store:
        return ObjectID(name.encode())
    return None


def _followed(repo: Repo, ref: str) -> bytes | None:
    try:
        value: bytes = repo.refs[Ref(ref.encode("utf-8"))]
    except KeyError:
        return None
    return value


def _subject(message: bytes) -> str:
    """The message's first paragraph on one line, as git's `%s`."""
    paragraph = message.decode("utf-8", errors="replace").strip().split("\n\n", 1)[0]
    return " ".join(line.strip() for line in paragraph.splitlines())


def _author(commit: Commit) -> tuple[str, str]:
    name = commit.author.decode("utf-8", errors="replace").rsplit(" <", 1)[0]
    zone = timezone(timedelta(seconds=commit.author_timezone))
    return name, datetime.fromtimestamp(commit.author_time, zone).isoformat()


def log(repo: Repo, head: bytes, limit: int) -> list[dict[str, Any]]:
    """The newest `limit` commits reachable from `head`, newest first, as `git log` lists them."""
    commits = []
    for entry in repo.get_walker(include=[ObjectID(head)], max_entries=limit):
        name, date = _author(entry.commit)
        commit = entry.commit.id.decode()
        commits.append(
            {"commit": commit, "author": name, "date": date, "subject": _subject(entry.commit.message)}
        )
    return commits


def _commit(repo: Repo, files: dict[str, str], message: str) -> None:
    from dulwich import porcelain  # its ~0.15 s of imports: only to make a work tree, never to push or log

    root = Path(repo.path).resolve()  # dulwich reads a relative path from the current directory
    for name, text in files.items():
        (root / name).write_text(text)
    porcelain.add(repo, [str(root / name) for name in files])
    stamp = datetime.now(UTC).timestamp()
    porcelain.commit(
        repo, message, author=IDENTITY, committer=IDENTITY, author_timestamp=stamp, commit_timestamp=stamp
    )


def init_workspace(work: Path, remote: Path) -> None:
    """`work` with a commit on `main` and on `docs/update` (`main` checked out), and an empty bare `remote`
    as its `origin`."""
    from dulwich import porcelain

    remote.mkdir(parents=True, exist_ok=True)
    Repo.init_bare(str(remote), default_branch=b"main").close()
    work.mkdir(parents=True, exist_ok=True)
    with Repo.init(str(work), default_branch=b"main") as repo:
        _commit(repo, {"README.md": "# Work tree of the Riverbeam author agent\n"}, "Initial commit")
        porcelain.checkout(repo, "main", new_branch="docs/update")
        _commit(repo, {"docs.md": "Updated documentation.\n"}, "Update the docs")
        porcelain.checkout(repo, "main")
        config = repo.get_config()
        config.set((b"remote", b"origin"), b"url", str(remote.resolve()).encode())
        config.set((b"remote", b"origin"), b"fetch", b"+refs/heads/*:refs/remotes/origin/*")
        config.write_to_path()

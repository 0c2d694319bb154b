"""A cloud clone keeps up with its remote (dulwich, no `git` executable): before a built-in tool reads or
pushes, the clone fetches the remote, at most once every FETCH_INTERVAL_SECONDS, and fast-forwards each
branch that can be, against a smart-HTTP git server on 127.0.0.1 asking for the credentials of a secret in
moto's Secrets Manager. Someone else's pushes are made from a clone of their own, straight to the bare
repository the server serves."""

from __future__ import annotations

import io
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import boto3
import pytest
from dulwich import porcelain
from dulwich.repo import Repo
from moto import mock_aws
from riverbeam.errors import ToolError
from riverbeam.tools import Tool, worktree
from riverbeam.tools.files import read_only_tools
from riverbeam.tools.git import git_push_tool
from riverbeam.tools.gitpush import push_branch
from riverbeam.tools.gitrepo import IDENTITY
from riverbeam.tools.worktree import GitRemote, WorkTree

from tests.support.git_server import git_http_server, hosted_remote

USER, TOKEN = "deploy-bot", "ghp_not-a-real-token"
FETCH = "GET /repo.git/info/refs?service=git-upload-pack"  # how a clone or a fetch begins


@dataclass
class Clone:
    """The deployed agent's clone of a remote served over HTTP, its tools, and the server's request log."""

    tree: WorkTree
    url: str
    bare: Path
    requests: list[str]

    def tool(self, name: str) -> Tool:
        tools = {t.name: t for t in [*read_only_tools(self.tree), git_push_tool(self.tree)]}
        return tools[name]

    def log(self, ref: str) -> list[str]:
        return [c["subject"] for c in self.tool("git_log").invoke({"ref": ref})["commits"]]

    def fetches(self) -> int:
        return self.requests.count(FETCH)


@pytest.fixture
def secret() -> Iterator[str]:
    with mock_aws():
        client = boto3.client("secretsmanager")
        yield client.create_secret(
            Name="riverbeam/git", SecretString=json.dumps({"username": USER, "password": TOKEN})
        )["ARN"]


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The clock the clone's fetches are spaced by, set by the test: `clock[0]` is now."""
    now = [1000.0]
    monkeypatch.setattr(worktree, "monotonic", lambda: now[0])
    return now


@pytest.fixture
def clone(no_git: None, secret: str, clock: list[float], tmp_path: Path) -> Iterator[Clone]:
    """A clone made by its first tool call (a log of main)."""
    bare = hosted_remote(tmp_path / "server")
    requests: list[str] = []
    with git_http_server(bare, username=USER, password=TOKEN, log=requests) as url:
        cloned = Clone(WorkTree(tmp_path / "data" / "clone", GitRemote(url, secret)), url, bare, requests)
        assert cloned.log("main") == ["Initial commit"]
        yield cloned


def someone_else_pushes(bare: Path, branch: str, name: str, *, start: str | None = None) -> str:
    """A commit adding `name`, pushed to `branch` of `bare` from a clone of their own (a new branch made
    from `start`); its id."""
    work = bare.parent / f"someone-{len(list(bare.parent.iterdir()))}"
    porcelain.clone(str(bare), str(work), errstream=io.BytesIO())
    with Repo(str(work)) as repo:
        if branch != "main":
            origin = repo.refs[f"refs/remotes/origin/{start or branch}".encode()]
            repo.refs[f"refs/heads/{branch}".encode()] = origin
            porcelain.checkout(repo, branch)
    made = commit_in(work, name, f"{name} from someone else\n")
    with Repo(str(work)) as repo:
        push_branch(repo, str(bare), branch)
    return made


def commit_in(tree: Path, name: str, text: str) -> str:
    (tree / name).write_text(text)
    porcelain.add(str(tree), [str(tree / name)])
    return porcelain.commit(str(tree), f"Add {name}", author=IDENTITY, committer=IDENTITY).decode()


def branch_of(bare: Path, name: str) -> str | None:
    with Repo(str(bare)) as repo:
        found = repo.refs.as_dict(b"refs/heads/").get(name.encode())
        return found.decode() if found else None


def later(clock: list[float]) -> None:
    clock[0] += worktree.FETCH_INTERVAL_SECONDS


def test_a_branch_pushed_after_the_clone_is_logged_and_can_be_pushed_to(
    clone: Clone, clock: list[float]
) -> None:
    theirs = someone_else_pushes(clone.bare, "feature/x", "x.md", start="main")
    later(clock)
    assert clone.log("feature/x") == ["Add x.md", "Initial commit"]

    porcelain.checkout(str(clone.tree.path), "feature/x")
    ours = commit_in(clone.tree.path, "y.md", "the agent's\n")
    later(clock)
    pushed = clone.tool("git_push").invoke({"ref": "feature/x"})
    assert pushed["commit"] == ours and branch_of(clone.bare, "feature/x") == ours
    assert f"{theirs[:7]}..{ours[:7]}" in pushed["summary"]


def test_branches_the_remote_moved_are_fast_forwarded_work_tree_and_all(
    clone: Clone, clock: list[float]
) -> None:
    on_docs = someone_else_pushes(clone.bare, "docs/update", "faq.md")
    on_main = someone_else_pushes(clone.bare, "main", "news.md")
    later(clock)
    assert clone.log("docs/update") == ["Add faq.md", "Update the docs", "Initial commit"]
    assert clone.log("main") == ["Add news.md", "Initial commit"]
    # main is checked out and had no local changes: its files moved with it
    assert clone.tool("read_file").invoke({"path": "news.md"})["text"] == "news.md from someone else\n"
    assert clone.tool("list_files").invoke({})["files"] == ["README.md", "news.md"]

    pushed = clone.tool("git_push").invoke({"ref": "docs/update"})  # nothing of its own: up to date
    assert pushed["commit"] == on_docs and pushed["summary"].endswith("\t[up to date]\nDone")
    ours = commit_in(clone.tree.path, "more.md", "the agent's\n")
    pushed = clone.tool("git_push").invoke({"ref": "main"})
    assert pushed["commit"] == ours and f"{on_main[:7]}..{ours[:7]}" in pushed["summary"]


def test_a_branch_that_diverged_is_left_as_it_is_and_its_push_refused(
    clone: Clone, clock: list[float]
) -> None:
    ours = commit_in(clone.tree.path, "ours.md", "the agent's\n")
    theirs = someone_else_pushes(clone.bare, "main", "theirs.md")
    later(clock)
    assert clone.log("main") == ["Add ours.md", "Initial commit"]
    assert clone.log("origin/main") == ["Add theirs.md", "Initial commit"]  # what the remote has
    assert sorted(p.name for p in clone.tree.path.iterdir()) == [".git", "README.md", "ours.md"]

    with pytest.raises(ToolError) as rejected:
        clone.tool("git_push").invoke({"ref": "main"})
    assert rejected.value.code == "BEM-330"
    assert "! [rejected]        main -> main (non-fast-forward)" in rejected.value.message
    assert branch_of(clone.bare, "main") == theirs and ours != theirs


def test_the_checked_out_branch_with_local_changes_is_not_moved(clone: Clone, clock: list[float]) -> None:
    readme = clone.tree.path / "README.md"
    readme.write_text("edited, not committed\n")
    theirs = someone_else_pushes(clone.bare, "main", "news.md")
    later(clock)
    assert clone.log("main") == ["Initial commit"]
    assert readme.read_text() == "edited, not committed\n"
    assert not (clone.tree.path / "news.md").exists()

    porcelain.reset(str(clone.tree.path), "hard")  # the change put back: the next fetch moves it
    (clone.tree.path / "draft.md").write_text("untracked\n")  # ...but an untracked file is a change too
    later(clock)
    assert clone.log("main") == ["Initial commit"]
    (clone.tree.path / "draft.md").unlink()
    later(clock)
    assert clone.log("main") == ["Add news.md", "Initial commit"]
    assert clone.tool("git_log").invoke({"ref": "main"})["commits"][0]["commit"] == theirs
    assert (clone.tree.path / "news.md").read_text() == "news.md from someone else\n"


def test_fetches_are_at_most_one_per_interval_and_one_at_a_time(clone: Clone, clock: list[float]) -> None:
    assert clone.fetches() == 1  # the clone itself: its first tool call fetches nothing more
    someone_else_pushes(clone.bare, "main", "news.md")
    clock[0] += worktree.FETCH_INTERVAL_SECONDS - 0.5
    for name in ("git_log", "list_files", "git_log"):
        clone.tool(name).invoke({})
    assert clone.fetches() == 1 and clone.log("main") == ["Initial commit"]  # not due: what it has

    clock[0] += 0.5
    results: list[list[str]] = []
    callers = [threading.Thread(target=lambda: results.append(clone.log("main"))) for _ in range(4)]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join(timeout=120)
    assert results == [["Add news.md", "Initial commit"]] * 4
    assert clone.fetches() == 2  # four threads, one fetch

    clone.tool("git_push").invoke({"ref": "main"})  # a push within the interval does not fetch either
    assert clone.fetches() == 2


def test_refused_credentials_leave_the_tools_on_what_the_clone_has_and_say_so(
    clone: Clone, clock: list[float], secret: str
) -> None:
    secrets = boto3.client("secretsmanager")
    secrets.put_secret_value(
        SecretId=secret, SecretString=json.dumps({"username": USER, "password": "revoked"})
    )
    someone_else_pushes(clone.bare, "main", "news.md")
    clock[0] += 30
    logged = clone.tool("git_log").invoke({"ref": "main"})
    assert [c["subject"] for c in logged["commits"]] == ["Initial commit"]
    assert logged["warning"] == (
        "the remote could not be fetched, so this may be out of date, last fetched 30 s ago: "
        f"fatal: Authentication failed for '{clone.url}'"
    )
    fetches = clone.fetches()
    listed = clone.tool("list_files").invoke({})  # within the interval: no new attempt, the same warning
    assert listed["files"] == ["README.md"] and listed["warning"] == logged["warning"]
    assert clone.fetches() == fetches

    secrets.put_secret_value(SecretId=secret, SecretString=json.dumps({"username": USER, "password": TOKEN}))
    later(clock)
    logged = clone.tool("git_log").invoke({"ref": "main"})
    assert "warning" not in logged and logged["commits"][0]["subject"] == "Add news.md"


def test_a_remote_out_of_reach_leaves_reads_working_and_a_push_refused_in_gits_words(
    no_git: None, secret: str, clock: list[float], tmp_path: Path
) -> None:
    bare = hosted_remote(tmp_path / "server")
    with git_http_server(bare, username=USER, password=TOKEN) as url:
        tree = WorkTree(tmp_path / "clone", GitRemote(url, secret))
        list_files, read_file, git_log = read_only_tools(tree)
        assert list_files.invoke({}) == {"path": ".", "files": ["README.md"], "truncated": False}
    # the server is stopped: nothing listens on its port
    later(clock)
    read = read_file.invoke({"path": "README.md"})
    assert read["text"].startswith("# Work tree") and "may be out of date" in read["warning"]
    assert f"fatal: unable to access '{url}': " in read["warning"] and str(tmp_path) not in read["warning"]
    assert git_log.invoke({})["commits"][0]["subject"] == "Initial commit"

    commit_in(tree.path, "x.md", "x\n")
    with pytest.raises(ToolError) as refused:
        git_push_tool(tree).invoke({"ref": "main"})
    assert refused.value.code == "BEM-330" and f"fatal: unable to access '{url}'" in refused.value.message
    assert TOKEN not in refused.value.message and TOKEN not in read["warning"]


def test_the_local_work_tree_never_fetches(
    no_git: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = WorkTree(tmp_path / "work", seeded=True)  # the local stack's: the remote's only writer
    attempts: list[Path] = []
    monkeypatch.setattr(worktree, "_fetched", lambda remote, path, last: attempts.append(path))
    (_, _, git_log) = read_only_tools(tree)
    for _ in range(2):
        assert git_log.invoke({"ref": "docs/update"})["commits"][0]["subject"] == "Update the docs"
    assert attempts == [] and "warning" not in git_log.invoke({})


def test_a_secret_gone_after_the_clone_is_a_warning_naming_it(
    clone: Clone, clock: list[float], secret: str
) -> None:
    boto3.client("secretsmanager").delete_secret(SecretId=secret, ForceDeleteWithoutRecovery=True)
    later(clock)
    listed = clone.tool("list_files").invoke({})
    assert listed["files"] == ["README.md"]
    assert listed["warning"].endswith(
        f": the git credentials {secret!r} cannot be read: ResourceNotFoundException"
    )
    with pytest.raises(ToolError) as refused:  # a push needs them: the same words, as its error
        clone.tool("git_push").invoke({"ref": "main"})
    assert refused.value.code == "BEM-351" and secret in refused.value.message

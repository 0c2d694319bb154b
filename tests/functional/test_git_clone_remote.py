"""The author's git tools with no `git` executable (dulwich), locally and as deployed: with
RIVERBEAM_GIT_REMOTE the work tree is a clone of it under the data dir, made by the first tool that needs it
and pushed to with the credentials of RIVERBEAM_GIT_SECRET's secret (moto's Secrets Manager), against a
smart-HTTP git server on 127.0.0.1 that asks for them."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest
from dulwich import porcelain
from dulwich.objects import Commit
from dulwich.repo import Repo
from moto import mock_aws
from riverbeam.errors import ToolError
from riverbeam.tools.files import read_only_tools
from riverbeam.tools.git import git_push_tool
from riverbeam.tools.gitrepo import IDENTITY, init_workspace
from riverbeam.tools.worktree import GitRemote, WorkTree

from tests.support.git_server import git_http_server, hosted_remote

USER, TOKEN = "deploy-bot", "ghp_not-a-real-token"


def branches(bare: Path) -> dict[str, str]:
    with Repo(str(bare)) as repo:
        return {name.decode(): sha.decode() for name, sha in repo.refs.as_dict(b"refs/heads/").items()}


def commit_in(tree: Path, name: str, text: str) -> str:
    (tree / name).write_text(text)
    porcelain.add(str(tree), [str(tree / name)])
    return porcelain.commit(str(tree), f"Add {name}", author=IDENTITY, committer=IDENTITY).decode()


@pytest.fixture
def secret(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    with mock_aws():
        client = boto3.client("secretsmanager")
        arn = client.create_secret(
            Name="riverbeam/git", SecretString=json.dumps({"username": USER, "password": TOKEN})
        )["ARN"]
        yield arn


@pytest.fixture
def hosted(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    bare = hosted_remote(tmp_path / "server")
    with git_http_server(bare, username=USER, password=TOKEN) as url:
        yield url, bare


def test_the_local_work_tree_without_git(no_git: None, tmp_path: Path) -> None:
    work, remote = tmp_path / "work", tmp_path / "remote.git"
    init_workspace(work, remote)
    list_files, read_file, git_log = read_only_tools(work)
    assert list_files.invoke({})["files"] == ["README.md"]
    assert read_file.invoke({"path": "README.md"})["text"].startswith("# Work tree")
    subjects = [c["subject"] for c in git_log.invoke({"ref": "docs/update"})["commits"]]
    assert subjects == ["Update the docs", "Initial commit"]

    pushed = git_push_tool(work).invoke({"ref": "docs/update"})
    assert branches(remote) == {"docs/update": pushed["commit"]}
    assert pushed["summary"] == (
        "To ../remote.git\n*\trefs/heads/docs/update:refs/heads/docs/update\t[new branch]\nDone"
    )


@pytest.mark.parametrize("ref", ["--force", "+main", ":main", "main:main", "a:b", "-f", "HEAD", "no such"])
def test_refs_that_look_like_options_or_refspecs_are_refused(no_git: None, tmp_path: Path, ref: str) -> None:
    work, remote = tmp_path / "work", tmp_path / "remote.git"
    init_workspace(work, remote)
    with pytest.raises(ToolError) as refused:
        git_push_tool(work).invoke({"ref": ref})
    assert refused.value.code == "BEM-332" and repr(ref) in refused.value.message
    assert branches(remote) == {}


def test_a_push_that_is_not_a_fast_forward_is_rejected(no_git: None, tmp_path: Path) -> None:
    work, remote = tmp_path / "work", tmp_path / "remote.git"
    init_workspace(work, remote)
    push = git_push_tool(work)
    first = push.invoke({"ref": "main"})["commit"]
    with Repo(str(work)) as repo:  # main rewritten: a commit that does not descend from the remote's
        pushed = repo[first.encode()]
        assert isinstance(pushed, Commit)
        rewritten = Commit()
        rewritten.tree, rewritten.parents, rewritten.message = pushed.tree, [], b"Rewritten history\n"
        rewritten.author = rewritten.committer = IDENTITY
        rewritten.author_time = rewritten.commit_time = pushed.commit_time + 1
        rewritten.author_timezone = rewritten.commit_timezone = 0
        repo.object_store.add_object(rewritten)
        repo.refs[b"refs/heads/main"] = rewritten.id
    with pytest.raises(ToolError) as rejected:
        push.invoke({"ref": "main"})
    assert rejected.value.code == "BEM-330"
    assert "! [rejected]        main -> main (non-fast-forward)" in rejected.value.message
    assert branches(remote) == {"main": first}


def test_the_cloud_work_tree_is_a_clone_pushed_with_the_secrets_credentials(
    no_git: None, secret: str, hosted: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, bare = hosted
    monkeypatch.setenv("RIVERBEAM_GIT_REMOTE", url)
    monkeypatch.setenv("RIVERBEAM_GIT_SECRET", secret)
    tree = WorkTree.from_environment(tmp_path / "data")
    assert tree.path == tmp_path / "data" / "clone" and not tree.path.exists()  # nothing cloned yet

    list_files, _, git_log = read_only_tools(tree)
    assert list_files.invoke({})["files"] == ["README.md"]  # the first use cloned it
    log = git_log.invoke({"ref": "docs/update"})["commits"]
    assert log[0]["subject"] == "Update the docs"
    assert TOKEN not in (tree.path / ".git" / "config").read_text()

    porcelain.checkout(str(tree.path), "docs/update")
    made = commit_in(tree.path, "notes.md", "From the agent's own tool.\n")
    pushed = git_push_tool(tree).invoke({"ref": "docs/update"})
    assert pushed["commit"] == made and branches(bare)["docs/update"] == made
    assert pushed["summary"].startswith(f"To {url}\n ") and TOKEN not in pushed["summary"]


def test_wrong_credentials_are_a_rejected_push(
    no_git: None, secret: str, hosted: tuple[str, Path], tmp_path: Path
) -> None:
    url, bare = hosted
    before = branches(bare)
    tree = WorkTree.from_environment(tmp_path)  # no remote in the environment: the local tree
    assert tree.clone_from is None
    cloned = WorkTree(tmp_path / "clone", clone_from=_remote(url, secret))
    cloned.ready()
    boto3.client("secretsmanager").put_secret_value(
        SecretId=secret, SecretString=json.dumps({"username": USER, "password": "revoked"})
    )
    commit_in(cloned.path, "x.md", "x")
    with pytest.raises(ToolError) as rejected:
        git_push_tool(cloned).invoke({"ref": "main"})
    assert rejected.value.code == "BEM-330"
    assert f"fatal: Authentication failed for '{url}'" in rejected.value.message
    assert "revoked" not in rejected.value.message and branches(bare) == before


@pytest.mark.parametrize(
    ("stored", "said"),
    [
        (None, "cannot be read: ResourceNotFoundException"),
        ("not json", "are not JSON with a username and a password"),
        (json.dumps({"username": USER}), "are not JSON with a username and a password"),
    ],
)
def test_a_secret_that_cannot_be_used_is_bem351_naming_it(
    no_git: None, secret: str, hosted: tuple[str, Path], tmp_path: Path, stored: str | None, said: str
) -> None:
    url, _ = hosted
    name = "riverbeam/other"
    if stored is not None:
        boto3.client("secretsmanager").create_secret(Name=name, SecretString=stored)
    (list_files, _, _) = read_only_tools(WorkTree(tmp_path / "clone", clone_from=_remote(url, name)))
    with pytest.raises(ToolError) as failed:
        list_files.invoke({})
    assert failed.value.code == "BEM-351" and failed.value.status == 503
    assert failed.value.message == f"the git credentials {name!r} {said}"
    assert not (tmp_path / "clone").exists()


def test_a_remote_that_cannot_be_reached_is_bem350_and_leaves_no_half_clone(
    no_git: None, tmp_path: Path
) -> None:
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{free.getsockname()[1]}/gone.git"  # nothing listens there
    (_, _, git_log) = read_only_tools(WorkTree(tmp_path / "clone", clone_from=_remote(url, "")))
    with pytest.raises(ToolError) as failed:
        git_log.invoke({})
    assert failed.value.code == "BEM-350" and url in failed.value.message
    assert list(tmp_path.iterdir()) == [tmp_path / "bin"]


@pytest.mark.parametrize(
    "url",
    ["http://git.example.com/r.git", "https://bot:t0ken@git.example.com/r.git", "file:///srv/r.git", "r.git"],
)
def test_a_remote_url_must_be_https_without_credentials(url: str) -> None:
    with pytest.raises(ValueError, match="RIVERBEAM_GIT_REMOTE must") as refused:
        _remote(url, "")
    assert "t0ken" not in str(refused.value)


def _remote(url: str, secret_id: str) -> GitRemote:
    return GitRemote(url, secret_id)

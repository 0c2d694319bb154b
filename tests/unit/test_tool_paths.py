"""The built-in tools keep to their work tree in what they list and what they say: a symlink that leaves
the tree is neither followed nor listed, and no error names a server path or a URL's credentials."""

from __future__ import annotations

import shutil
import socket
from pathlib import Path

import pytest
from riverbeam.agent.workspace import prepare_workspace
from riverbeam.errors import ToolError
from riverbeam.tools.files import read_only_tools
from riverbeam.tools.git import git_push_tool
from riverbeam.tools.gitpush import Credentials, PushRejected, push_branch
from riverbeam.tools.gitrepo import opened
from riverbeam.tools.redact import redacted


@pytest.fixture
def work(tmp_path: Path) -> Path:
    tree, _ = prepare_workspace(tmp_path / "data")
    return tree


def test_list_files_neither_follows_nor_lists_symlinks_that_leave_the_tree(
    work: Path, tmp_path: Path
) -> None:
    (list_files, read_file, _) = read_only_tools(work)
    outside = tmp_path / "secret.txt"
    outside.write_text("not the agent's")
    (work / "etc").symlink_to("/etc")
    (work / "secret.txt").symlink_to(outside)
    (work / "docs").mkdir()
    (work / "docs" / "up").symlink_to("../..")  # the tree's folder, from inside the tree
    (work / "readme-link").symlink_to("README.md")  # stays inside: listed
    (work / "config-link").symlink_to(".git/config")  # into .git: not listed
    (work / "dangling").symlink_to(tmp_path / "nowhere")

    listed = list_files.invoke({})
    assert listed["files"] == ["README.md", "readme-link"]
    for path in ["etc", "secret.txt", "docs/up", "config-link", "etc/passwd"]:
        with pytest.raises(ToolError) as refused:
            read_file.invoke({"path": path})
        assert refused.value.code == "BEM-332" and "outside the work tree" in refused.value.message
    with pytest.raises(ToolError, match="outside the work tree"):
        list_files.invoke({"path": "etc"})
    assert read_file.invoke({"path": "readme-link"})["text"].startswith("# Work tree")


def test_an_unreadable_file_is_a_failure_that_names_no_server_path(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (_, read_file, _) = read_only_tools(work)
    (work / "locked.txt").write_text("x")

    def refused(self: Path, *_: object, **__: object) -> None:  # as open() refuses it to a user, not root
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "open", refused)
    with pytest.raises(ToolError) as failed:
        read_file.invoke({"path": "locked.txt"})
    assert failed.value.code == "BEM-331"
    assert failed.value.message == "read_file: 'locked.txt' cannot be read: Permission denied"


def test_a_failed_push_names_the_remote_without_its_server_path(work: Path) -> None:
    remote = work.parent / "remote.git"
    hook = remote / "hooks" / "pre-receive"
    hook.write_text(f"#!/bin/sh\necho 'refused by {remote}/hooks/pre-receive' >&2\nexit 1\n")
    hook.chmod(0o755)
    with pytest.raises(ToolError) as refused:
        git_push_tool(work).invoke({"ref": "docs/update"})
    message = refused.value.message
    assert refused.value.code == "BEM-330"
    assert str(work.parent) not in message and str(work.parent.resolve()) not in message, message
    assert "refused by ../remote.git/hooks/pre-receive" in message
    assert "failed to push some refs to '../remote.git'" in message


def test_a_pushs_summary_names_no_server_path(work: Path) -> None:
    output = git_push_tool(work).invoke({"ref": "docs/update"})
    assert str(work.parent) not in output["summary"] and "../remote.git" in output["summary"]


def test_a_remote_that_is_gone_is_named_without_its_server_path(work: Path) -> None:
    shutil.rmtree(work.parent / "remote.git")
    with pytest.raises(ToolError) as failed:
        git_push_tool(work).invoke({"ref": "docs/update"})
    assert failed.value.code == "BEM-330", failed.value.message
    assert str(work.parent) not in failed.value.message
    assert "'../remote.git' does not appear to be a git repository" in failed.value.message


def test_a_work_tree_that_is_no_repository_is_a_failure_naming_no_path(work: Path) -> None:
    shutil.rmtree(work / ".git")
    (_, _, git_log) = read_only_tools(work)
    with pytest.raises(ToolError) as failed:
        git_log.invoke({})
    assert failed.value.code == "BEM-331"
    assert failed.value.message == "the work tree is not a git repository"


def test_a_remote_that_never_answers_is_a_rejected_push_naming_no_credentials(work: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as silent, opened(work) as repo:  # accepts, never answers
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/r.git"
        with pytest.raises(PushRejected) as refused:
            push_branch(repo, url, "main", credentials=Credentials("bot", "t0ken"), timeout=0.5)
    said = "\n".join(refused.value.lines)
    assert f"fatal: unable to access '{url}'" in said and "t0ken" not in said, said


@pytest.mark.parametrize(
    ("said", "shown"),
    [
        (
            "fatal: cannot change to '{tree}/sub': No such file",
            "fatal: cannot change to './sub': No such file",
        ),
        ("To {tree}", "To ."),
        ("To {data}/remote.git", "To ../remote.git"),
        ("{tree}2/x is not it", "../work2/x is not it"),  # a folder beside the tree, not in it
        ("/srv/hooks/check: denied", ".../check: denied"),
        ("see https://example.com/a/b", "see https://example.com/a/b"),
        (
            "fatal: unable to access 'https://bot:t0ken@git.example.com/r.git/'",
            "fatal: unable to access 'https://***@git.example.com/r.git/'",
        ),
        (
            "refs/heads/main -> main (pre-receive hook declined)",
            "refs/heads/main -> main (pre-receive hook declined)",
        ),
    ],
)
def test_redacted(work: Path, said: str, shown: str) -> None:
    assert redacted(said.format(tree=work, data=work.parent), work) == shown

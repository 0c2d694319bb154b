"""The author agent's read-only tools over its work tree: list files, read a file, show the log; none needs
approval and none reaches outside the work tree."""

from __future__ import annotations

from pathlib import Path

import pytest
from riverbeam.agent.builtin_agents import author_agent
from riverbeam.agent.workspace import prepare_workspace
from riverbeam.errors import ToolError
from riverbeam.tools.files import MAX_READ_BYTES, read_only_tools


@pytest.fixture
def work(tmp_path: Path) -> Path:
    tree, _ = prepare_workspace(tmp_path)
    return tree


def test_none_needs_approval_and_the_author_has_them(work: Path, tmp_path: Path) -> None:
    tools = read_only_tools(work)
    assert [t.name for t in tools] == ["list_files", "read_file", "git_log"]
    assert not any(t.confirm_required for t in tools)
    names = set(author_agent(tmp_path).tools)
    assert {"git_push", "list_files", "read_file", "git_log"} <= names


def test_list_files_leaves_out_git(work: Path) -> None:
    (list_files, _, _) = read_only_tools(work)
    (work / "sub").mkdir()
    (work / "sub" / "a.txt").write_text("a")
    listed = list_files.invoke({})
    assert listed["files"] == ["README.md", "sub/a.txt"]
    assert list_files.invoke({"path": "sub"})["files"] == ["sub/a.txt"]


def test_read_file_reads_text_and_caps_it(work: Path) -> None:
    (_, read_file, _) = read_only_tools(work)
    assert read_file.invoke({"path": "README.md"})["text"].startswith("# Work tree")
    (work / "big.txt").write_text("x" * (MAX_READ_BYTES + 10))
    big = read_file.invoke({"path": "big.txt"})
    assert big["truncated"] is True and len(big["text"]) == MAX_READ_BYTES


@pytest.mark.parametrize("path", ["../outside.txt", "/etc/passwd", ".git/config", "sub/../../x"])
def test_paths_outside_the_work_tree_are_refused(work: Path, path: str) -> None:
    (list_files, read_file, _) = read_only_tools(work)
    with pytest.raises(ToolError) as refused:
        read_file.invoke({"path": path})
    assert refused.value.code == "BEM-332"
    with pytest.raises(ToolError):
        list_files.invoke({"path": path})


def test_git_log_shows_a_branchs_commits(work: Path) -> None:
    (_, _, git_log) = read_only_tools(work)
    log = git_log.invoke({"ref": "docs/update"})
    assert [c["subject"] for c in log["commits"]] == ["Update the docs", "Initial commit"]
    assert len(git_log.invoke({"ref": "main", "limit": 1})["commits"]) == 1
    for bad in ("--all", "no such branch"):
        with pytest.raises(ToolError):
            git_log.invoke({"ref": bad})

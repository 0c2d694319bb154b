"""The built-in `author` agent: the offline model with a real git_push in a work tree."""

from __future__ import annotations

from pathlib import Path

from ..tools.files import read_only_tools
from ..tools.git import git_push_tool
from .llm import AuthorOfflineModel
from .runner import ToolAgentRunner
from .workspace import prepare_workspace


def author_agent(data_dir: str | Path) -> ToolAgentRunner:
    """`author` on the offline model, pushing branches of the work tree under `data_dir` to its remote
    (with approval), and reading it (list files, read a file, show the log) without."""
    work, _ = prepare_workspace(data_dir)
    return ToolAgentRunner(model=AuthorOfflineModel(), tools=[git_push_tool(work), *read_only_tools(work)])

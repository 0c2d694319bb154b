"""The real git_push tool: pushes to a bare remote; a rejected push is BEM-330 with the remote's message."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from beam_store import BeamStore, InMemoryStore, ToolResultPart
from riverbeam import (
    AgentResult,
    BeamError,
    ModelTurn,
    RiverBeam,
    ScriptedModel,
    ToolAgentRunner,
    ToolCall,
    ToolError,
    git_push_tool,
)
from riverbeam.agent.workspace import prepare_workspace

from tests.support.agents import FrameLog, invoke_body, resume_body


def remote_branches(remote: Path) -> dict[str, str]:
    out = subprocess.run(
        ["git", "-C", str(remote), "for-each-ref", "--format=%(refname:short) %(objectname)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return dict(line.split() for line in out.splitlines())


def local_commit(work: Path, ref: str) -> str:
    return subprocess.run(
        ["git", "-C", str(work), "rev-parse", ref], capture_output=True, text=True, check=True
    ).stdout.strip()


def reject_pushes(remote: Path, message: str) -> None:
    hook = remote / "hooks" / "pre-receive"
    hook.write_text(f"#!/bin/sh\necho '{message}' >&2\nexit 1\n")
    hook.chmod(0o755)


def test_workspace_has_main_and_docs_update_and_an_empty_remote(tmp_path: Path) -> None:
    work, remote = prepare_workspace(tmp_path)
    assert local_commit(work, "main") != local_commit(work, "docs/update")
    assert remote_branches(remote) == {}
    assert prepare_workspace(tmp_path) == (work, remote)  # reused, not remade


def test_git_push_pushes_the_branch(tmp_path: Path) -> None:
    work, remote = prepare_workspace(tmp_path)
    push = git_push_tool(work)
    assert push.confirm_required and push.json_schema()["required"] == ["ref"]
    output = push.invoke({"ref": "docs/update"})
    assert remote_branches(remote) == {"docs/update": local_commit(work, "docs/update")}
    assert output["commit"] == local_commit(work, "docs/update") and output["ref"] == "docs/update"


def test_a_rejected_push_is_bem330_with_the_remotes_message(tmp_path: Path) -> None:
    work, remote = prepare_workspace(tmp_path)
    reject_pushes(remote, "docs/update is protected: ask the release manager")
    with pytest.raises(ToolError) as raised:
        git_push_tool(work).invoke({"ref": "docs/update"})
    assert (raised.value.code, raised.value.status) == ("BEM-330", 502)
    assert "docs/update is protected: ask the release manager" in raised.value.message
    assert remote_branches(remote) == {}


@pytest.mark.parametrize("ref", ["--force", "no such branch", "../../etc"])
def test_git_push_refuses_refs_that_are_not_branch_names(tmp_path: Path, ref: str) -> None:
    work, remote = prepare_workspace(tmp_path)
    with pytest.raises(ToolError) as raised:
        git_push_tool(work).invoke({"ref": ref})
    assert raised.value.code == "BEM-332"
    assert remote_branches(remote) == {}


def test_a_missing_branch_is_reported_as_rejected(tmp_path: Path) -> None:
    work, _ = prepare_workspace(tmp_path)
    with pytest.raises(ToolError) as raised:
        git_push_tool(work).invoke({"ref": "feature/none"})
    assert raised.value.code == "BEM-330"


def test_rejected_push_through_the_pipeline_leaves_the_action_resolved_with_the_failure(
    tmp_path: Path, store: BeamStore
) -> None:
    work, remote = prepare_workspace(tmp_path)
    reject_pushes(remote, "pushes are frozen today")
    model = ScriptedModel(
        [
            ModelTurn(tool_calls=[ToolCall(name="git_push", args={"ref": "docs/update"})]),
            lambda conversation: ModelTurn(text="The push failed."),
        ]
    )
    beam = RiverBeam(store)
    beam.register_agent("author", ToolAgentRunner(model=model, tools=[git_push_tool(work)]))
    result = beam.invoke(invoke_body())
    assert isinstance(result, AgentResult)
    frames = FrameLog()
    beam.resume(resume_body(result), on_frame=frames)

    action = store.get_action(result.action_required[0].action_id or "")
    assert action is not None and action.status == "resolved"
    assert action.outcome is not None and action.outcome.error is not None
    assert (
        action.outcome.error.code == "BEM-330" and "pushes are frozen today" in action.outcome.error.message
    )
    errors = [f for f in frames if f.type == "error"]  # type: ignore[attr-defined]
    assert [e.code for e in errors] == ["BEM-330"]  # type: ignore[attr-defined]
    tool_messages = [
        p for m in store.list_messages(result.session_id or "") if m.role == "tool" for p in m.content
    ]
    assert isinstance(tool_messages[0], ToolResultPart) and tool_messages[0].error is not None
    assert tool_messages[0].error.code == "BEM-330"

    with pytest.raises(BeamError) as again:
        beam.resume(resume_body(result))
    assert again.value.code == "BEM-066"
    assert remote_branches(remote) == {}


def test_approved_push_through_the_pipeline_reaches_the_remote(tmp_path: Path) -> None:
    work, remote = prepare_workspace(tmp_path)
    model = ScriptedModel(
        [
            ModelTurn(tool_calls=[ToolCall(name="git_push", args={"ref": "docs/update"})]),
            ModelTurn(text="Pushed."),
        ]
    )
    beam = RiverBeam(InMemoryStore())
    beam.register_agent("author", ToolAgentRunner(model=model, tools=[git_push_tool(work)]))
    result = beam.invoke(invoke_body())
    assert remote_branches(remote) == {}
    beam.resume(resume_body(result))
    assert remote_branches(remote) == {"docs/update": local_commit(work, "docs/update")}

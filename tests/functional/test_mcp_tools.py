"""MCP tools behind the gate, against an MCP server on 127.0.0.1 that the tests start: every tool asks for
approval whatever its annotations say, runs once on approval and never on rejection, args and edited args
that do not fit the server's input schema are refused before the server is called, and a server that is
down, silent or failing is a code of its own naming it."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest
from beam_store import InMemoryStore, ToolResultPart
from riverbeam import (
    AgentResult,
    BeamError,
    ModelTurn,
    RiverBeam,
    ScriptedModel,
    ToolAgentRunner,
    ToolCall,
    ToolError,
    mcp_tools,
)
from riverbeam.mcp import McpServer, mcp_tool

from tests.support.agents import invoke_body, resume_body
from tests.support.mcp_server import McpFixture, mcp_server


@pytest.fixture(scope="module")
def release() -> Iterator[McpFixture]:
    with mcp_server() as fixture:
        yield fixture


def beam_calling(tools: list[Any], call: ToolCall) -> RiverBeam:
    model = ScriptedModel([ModelTurn(tool_calls=[call]), ModelTurn(text="Done.")])
    beam = RiverBeam(InMemoryStore())
    beam.register_agent("author", ToolAgentRunner(model=model, tools=tools))
    return beam


def tool_outcome(beam: RiverBeam, result: AgentResult) -> ToolResultPart:
    messages = beam.store.list_messages(result.session_id or "")
    return next(p for m in messages if m.role == "tool" for p in m.content if isinstance(p, ToolResultPart))


def test_every_tool_is_named_after_its_server_and_asks_whatever_its_hints(release: McpFixture) -> None:
    tools = {t.name: t for t in mcp_tools("release", release.url)}
    assert sorted(tools) == ["release/broken", "release/deploy", "release/status"]
    assert all(t.confirm_required for t in tools.values())
    assert tools["release/status"].annotations["read_only_hint"] is True  # kept, and shown
    assert "read-only" in tools["release/status"].description
    assert tools["release/deploy"].annotations["destructive_hint"] is True
    assert tools["release/deploy"].json_schema()["required"] == ["service", "version"]


@pytest.mark.parametrize("tool", ["deploy", "status"])
def test_a_call_waits_for_approval_and_runs_once_when_approved(release: McpFixture, tool: str) -> None:
    args = {"service": "web", "version": "1.4.2"} if tool == "deploy" else {"service": "web"}
    before = release.calls[tool]
    beam = beam_calling(mcp_tools("release", release.url), ToolCall(name=f"release/{tool}", args=args))
    result = beam.invoke(invoke_body(text=f"{tool} web"))
    assert isinstance(result, AgentResult) and result.interrupted
    assert [(a.tool, a.args) for a in result.action_required] == [(f"release/{tool}", args)]
    assert release.calls[tool] == before  # asked, not run

    beam.resume(resume_body(result))
    assert release.calls[tool] == before + 1
    outcome = tool_outcome(beam, result)
    assert outcome.error is None and outcome.output is not None
    with pytest.raises(BeamError) as again:
        beam.resume(resume_body(result))
    assert again.value.code == "BEM-066" and release.calls[tool] == before + 1


def test_a_rejected_call_never_reaches_the_server(release: McpFixture) -> None:
    before = release.calls["deploy"]
    call = ToolCall(name="release/deploy", args={"service": "web", "version": "9.9.9"})
    beam = beam_calling(mcp_tools("release", release.url), call)
    result = beam.invoke(invoke_body(text="deploy"))
    assert isinstance(result, AgentResult)
    beam.resume(resume_body(result, status="cancelled", reason="not on a Friday"))
    assert release.calls["deploy"] == before
    assert tool_outcome(beam, result).error is not None


def test_edited_args_outside_the_schema_are_refused_and_nothing_runs(release: McpFixture) -> None:
    before = release.calls["deploy"]
    call = ToolCall(name="release/deploy", args={"service": "web", "version": "1.0"})
    beam = beam_calling(mcp_tools("release", release.url), call)
    result = beam.invoke(invoke_body(text="deploy"))
    assert isinstance(result, AgentResult)
    for edited, field in [
        ({"service": "web", "version": "1.0", "replicas": "three"}, "replicas"),
        ({"service": "web"}, "version"),
    ]:
        with pytest.raises(BeamError) as refused:
            beam.resume(resume_body(result, edited_args=edited))
        assert refused.value.code == "BEM-001" and f"actions.0.edited_args.{field}" in refused.value.message
    assert release.calls["deploy"] == before
    beam.resume(resume_body(result, edited_args={"service": "web", "version": "1.0", "replicas": 3}))
    assert release.calls["deploy"] == before + 1
    assert release.args[-1] == ("deploy", {"service": "web", "version": "1.0", "replicas": 3})


def test_args_outside_the_schema_never_reach_the_server(release: McpFixture) -> None:
    deploy = next(t for t in mcp_tools("release", release.url) if t.name == "release/deploy")
    before = release.calls["deploy"]
    for args in (
        {"service": 7, "version": "1"},
        {"service": "web"},
        {"service": "a", "version": "1", "replicas": "x"},
    ):
        with pytest.raises(ToolError) as refused:
            deploy.invoke(args)
        assert refused.value.code == "BEM-332"
    assert release.calls["deploy"] == before


def test_a_tool_that_fails_on_the_server_is_bem354_naming_the_server(release: McpFixture) -> None:
    broken = next(t for t in mcp_tools("release", release.url) if t.name == "release/broken")
    with pytest.raises(ToolError) as failed:
        broken.invoke({"reason": "testing"})
    assert failed.value.code == "BEM-354" and "the MCP server 'release'" in failed.value.message


def test_a_server_that_is_down_is_bem352_naming_it() -> None:
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{free.getsockname()[1]}/mcp"  # nothing listens there
    with pytest.raises(BeamError) as down:
        mcp_tools("release", url)
    assert (down.value.code, down.value.status) == ("BEM-352", 503)
    assert down.value.message.startswith("the MCP server 'release' cannot be reached")
    tool = mcp_tool(McpServer("release", url), "deploy")  # named in agents.yaml: its call fails alone
    with pytest.raises(BeamError) as failed:
        tool.invoke({"service": "web", "version": "1"})
    assert failed.value.code == "BEM-352"


def test_a_server_that_never_answers_is_bem353() -> None:
    with socket.create_server(("127.0.0.1", 0)) as silent:  # accepts, never answers
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/mcp"
        with pytest.raises(BeamError) as late:
            mcp_tools("slow", url, timeout=1)
    assert (late.value.code, late.value.status) == ("BEM-353", 504)
    assert late.value.message == "the MCP server 'slow' did not answer in time"


def test_headers_go_with_every_request_and_are_never_told() -> None:
    with mcp_server(headers={"Authorization": "Bearer s3cret"}) as guarded:
        with pytest.raises(BeamError) as refused:
            mcp_tools("guarded", guarded.url)
        assert refused.value.code == "BEM-354" and "'guarded'" in refused.value.message
        with pytest.raises(BeamError) as wrong:
            mcp_tools("guarded", guarded.url, headers={"Authorization": "Bearer wrong"})
        assert "wrong" not in wrong.value.message
        tools = mcp_tools("guarded", guarded.url, headers={"Authorization": "Bearer s3cret"})
        status = next(t for t in tools if t.name == "guarded/status")
        assert status.invoke({"service": "db"}) == {"result": "db is healthy"}
        assert "s3cret" not in repr(status)

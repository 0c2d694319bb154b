"""`mcp_servers` in agents.yaml: an agent's tools named `<server>/<tool>` (or `<server>/*`) come from that
MCP server, ask for approval, and can be tried on the offline model with `call <tool> <args JSON>`; a tool
naming no declared server is refused when the file is read; a server that is down fails the call alone."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from beam_store import InMemoryStore, ToolResultPart
from riverbeam import AgentResult, RiverBeam
from riverbeam.agent.config import ConfigError, configured_runners

from tests.support.agents import invoke_body, resume_body
from tests.support.mcp_server import McpFixture, mcp_server


@pytest.fixture(scope="module")
def release() -> Iterator[McpFixture]:
    with mcp_server() as fixture:
        yield fixture


def agents_file(tmp_path: Path, url: str, tools: list[str], **agent: object) -> Path:
    path = tmp_path / "agents.json"  # the same document as YAML; JSON is what the layer ships
    document = {
        "mcp_servers": {"release": {"url": url, "timeout": 10}},
        "agents": {"author": {"tools": tools, **agent}},
    }
    path.write_text(json.dumps(document))
    return path


def beam_of(path: Path, tmp_path: Path) -> RiverBeam:
    beam = RiverBeam(InMemoryStore())
    for name, runner in configured_runners(path, work_tree=tmp_path / "work", offline=True).items():
        beam.register_agent(name, runner)
    return beam


def outcome(beam: RiverBeam, result: AgentResult) -> ToolResultPart:
    messages = beam.store.list_messages(result.session_id or "")
    return next(p for m in messages if m.role == "tool" for p in m.content if isinstance(p, ToolResultPart))


def test_a_servers_tool_is_called_after_approval_on_the_offline_model(
    release: McpFixture, tmp_path: Path
) -> None:
    beam = beam_of(agents_file(tmp_path, release.url, ["release/status", "list_files"]), tmp_path)
    before = release.calls["status"]
    result = beam.invoke(invoke_body(text='call release/status {"service": "api"}'))
    assert isinstance(result, AgentResult) and result.interrupted
    assert [(a.tool, a.args) for a in result.action_required] == [("release/status", {"service": "api"})]
    assert release.calls["status"] == before

    beam.resume(resume_body(result))
    assert release.calls["status"] == before + 1
    assert outcome(beam, result).output == {"result": "api is healthy"}


def test_server_star_is_every_tool_it_lists_and_settings_may_name_them(
    release: McpFixture, tmp_path: Path
) -> None:
    path = agents_file(
        tmp_path, release.url, ["release/*"], tool_settings={"release/deploy": {"editable": False}}
    )
    runner = configured_runners(path, work_tree=tmp_path / "work", offline=True)["author"]
    tools = runner.tools
    assert sorted(tools) == ["release/broken", "release/deploy", "release/status"]
    assert all(t.confirm_required for t in tools.values())
    assert not tools["release/deploy"].editable and tools["release/status"].editable


@pytest.mark.parametrize(
    ("tools", "said"),
    [
        (["billing/charge"], "'billing/charge' names no server of mcp_servers (['release'])"),
        (["bad name/x"], "'bad name/x' is not <server>/<tool>"),
        (["release/"], "'release/' is not <server>/<tool>"),
    ],
)
def test_a_tool_naming_no_declared_server_is_refused_with_the_file(
    tmp_path: Path, tools: list[str], said: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        configured_runners(
            agents_file(tmp_path, "http://127.0.0.1:9/mcp", tools), work_tree=tmp_path, offline=True
        )
    assert said in str(refused.value) and "agents.json" in str(refused.value)


def test_a_server_that_is_down_fails_the_call_alone(tmp_path: Path) -> None:
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{free.getsockname()[1]}/mcp"  # nothing listens there
    beam = beam_of(agents_file(tmp_path, url, ["release/deploy"]), tmp_path)  # named: nothing asked yet
    result = beam.invoke(invoke_body(text='call release/deploy {"service": "web", "version": "2"}'))
    # its args cannot be checked against a schema nobody can read: the call fails before anyone is asked
    assert isinstance(result, AgentResult) and not result.interrupted
    assert beam.store.list_actions(result.interaction_id or "") == []
    failed = outcome(beam, result)
    assert failed.error is not None and failed.error.code == "BEM-352"
    assert "the MCP server 'release' cannot be reached" in failed.error.message
    run = beam.store.get_run(result.run_id or "")
    assert run is not None

"""Your own code in the deployment: the layer as `sam build` makes it carries agent_code/ (the folder
agents.yaml names as `code`), so agents.yaml's `module:function` tools import from it as in Lambda; the
example tool there, and its own test."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import pytest
from beam_store import InMemoryStore, ToolResultPart
from riverbeam import AgentResult, RiverBeam, ToolError
from riverbeam.agent.config import configured_runners

from tests.conftest import LAYER
from tests.support.agents import invoke_body

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
from agent_code import ship_agent_code


def test_the_built_layer_carries_the_code_folder() -> None:
    shipped = LAYER / "python" / "example_tools"
    assert (shipped / "versions.py").is_file() and (shipped / "__init__.py").is_file()
    module = importlib.import_module("example_tools.versions")
    assert Path(module.__file__ or "").is_relative_to(LAYER), module.__file__  # the layer's copy


@pytest.mark.parametrize(
    ("args", "bumped"),
    [
        ({"version": "1.4.2"}, "1.4.3"),
        ({"version": "v1.4.2", "part": "minor"}, "v1.5.0"),
        ({"version": "1.4.2", "part": "major"}, "2.0.0"),
    ],
)
def test_the_example_tool_bumps_a_version(args: dict[str, str], bumped: str) -> None:
    from example_tools.versions import bump_version

    assert not bump_version.confirm_required
    assert bump_version.invoke(args) == {"version": args["version"], "next": bumped}


def test_the_example_tool_refuses_what_is_no_version() -> None:
    from example_tools.versions import bump_version

    for args in ({"version": "one.two"}, {"version": "1.2.3", "part": "build"}):
        with pytest.raises(ToolError) as refused:
            bump_version.invoke(args)
        assert refused.value.code == "BEM-332"


def test_agents_yaml_names_it_and_the_offline_model_calls_it(tmp_path: Path) -> None:
    agents = tmp_path / "agents.json"
    agents.write_text(
        json.dumps({"agents": {"releaser": {"tools": ["example_tools.versions:bump_version"]}}})
    )
    beam = RiverBeam(InMemoryStore())
    for name, runner in configured_runners(agents, work_tree=tmp_path / "work", offline=True).items():
        beam.register_agent(name, runner)
    result = beam.invoke(
        {**invoke_body(text='call bump_version {"version": "2.0.9"}'), "agent_name": "releaser"}
    )
    assert isinstance(result, AgentResult) and not result.interrupted  # it changes nothing: no approval
    outputs = [
        p.output
        for m in beam.store.list_messages(result.session_id or "")
        for p in m.content
        if isinstance(p, ToolResultPart)
    ]
    assert outputs == [{"version": "2.0.9", "next": "2.0.10"}]


def test_shipping_copies_packages_and_modules_and_refuses_a_name_the_layer_has(tmp_path: Path) -> None:
    agents_file, agents_json, site = tmp_path / "agents.yaml", tmp_path / "agents.json", tmp_path / "site"
    agents_json.write_text(json.dumps({"code": "mine", "agents": {}}))
    site.mkdir()
    assert ship_agent_code(agents_file, agents_json, site) == []  # no folder: nothing shipped
    (tmp_path / "mine" / "pkg" / "tests").mkdir(parents=True)
    (tmp_path / "mine" / "pkg" / "__init__.py").write_text("")
    (tmp_path / "mine" / "pkg" / "tests" / "test_x.py").write_text("")
    (tmp_path / "mine" / "single.py").write_text("X = 1\n")
    (tmp_path / "mine" / "notes.txt").write_text("not code")
    assert ship_agent_code(agents_file, agents_json, site) == ["pkg", "single.py"]
    assert sorted(p.name for p in site.iterdir()) == ["pkg", "single.py"]
    assert not (site / "pkg" / "tests").exists()
    (tmp_path / "mine" / "single.py").unlink()
    (tmp_path / "mine" / "pkg").rename(tmp_path / "mine" / "riverbeam")
    (site / "riverbeam").mkdir()
    with pytest.raises(SystemExit, match="would replace 'riverbeam'"):
        ship_agent_code(agents_file, agents_json, site)

"""agents.yaml: agents configured without code, and refused with a clear message when the file is wrong."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from riverbeam import AuthorOfflineModel, BedrockConverseModel, ChatModel
from riverbeam.agent import config as agent_config
from riverbeam.agent.config import ConfigError, build_runners, configured_runners, load_agents, model_ids

ROOT = Path(__file__).resolve().parents[2]


def deploy(env: str) -> str:
    """Deploy to an environment."""
    return f"deployed to {env}"


CONFIG = """
agents:
  author:
    model_id: anthropic.claude-3-5-haiku-20241022-v1:0
    system: You push branches.
    inference: {maxTokens: 256, temperature: 0.1, stopSequences: ["END"]}
    tools: [git_push, "tests.unit.test_agent_config:deploy"]
    approval: [deploy]
    window: {max_messages: 20}
  helper:
    tools: [git_push]
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "agents.yaml"
    path.write_text(text)
    return path


def test_agents_are_built_from_the_file(tmp_path: Path) -> None:
    config = load_agents(write(tmp_path, CONFIG))
    runners = build_runners(config, work_tree=tmp_path / "work", offline=False)
    author = runners["author"]
    assert isinstance(author.model, BedrockConverseModel)
    assert author.model.model_id == "anthropic.claude-3-5-haiku-20241022-v1:0"
    assert author.model.system == "You push branches."
    assert author.model.inference == {"maxTokens": 256, "temperature": 0.1, "stopSequences": ["END"]}
    assert author.model.window.max_messages == 20
    assert {name: t.confirm_required for name, t in author.tools.items()} == {
        "git_push": True,
        "deploy": True,
    }
    assert author.tools["deploy"].invoke({"env": "prod"}) == "deployed to prod"
    assert isinstance(runners["helper"].model, AuthorOfflineModel)  # no model_id: the offline model
    assert model_ids(config) == ["anthropic.claude-3-5-haiku-20241022-v1:0"]


def test_an_agents_model_is_made_by_its_first_use(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An API handler checks an agent's tools and queues its run: it never makes (nor imports) a model."""
    made: list[str | None] = []
    build_model = agent_config.build_model

    def counted(spec: agent_config.AgentSpec, **kwargs: Any) -> ChatModel:
        made.append(spec.model_id)
        return build_model(spec, **kwargs)

    monkeypatch.setattr(agent_config, "build_model", counted)
    runners = build_runners(load_agents(write(tmp_path, CONFIG)), work_tree=tmp_path, offline=False)
    assert runners["author"].editable("git_push") and made == []
    assert isinstance(runners["author"].model, BedrockConverseModel) and runners["author"].model is not None
    assert made == ["anthropic.claude-3-5-haiku-20241022-v1:0"]


def test_offline_runs_every_agent_on_the_offline_model(tmp_path: Path) -> None:
    runners = build_runners(load_agents(write(tmp_path, CONFIG)), work_tree=tmp_path, offline=True)
    assert all(isinstance(r.model, AuthorOfflineModel) for r in runners.values())


def test_the_file_cannot_take_an_approval_away(tmp_path: Path) -> None:
    config = load_agents(write(tmp_path, "agents:\n  a:\n    tools: [git_push]\n    approval: []\n"))
    runner = build_runners(config, work_tree=tmp_path, offline=True)["a"]
    assert runner.tools["git_push"].confirm_required


@pytest.mark.parametrize(
    "text, says",
    [
        ("agents:\n  a:\n    tools: [rm_rf]\n", "unknown tool 'rm_rf'"),
        ("agents:\n  a:\n    tools: [git_push]\n    approval: [deploy]\n", "approval"),
        ("agents:\n  a:\n    colour: blue\n", "agents.a.colour"),
        ("agents:\n  a:\n    inference: {temperature: 7}\n", "agents.a.inference.temperature"),
        ("agents:\n  a:\n    tools: ['no_such_module:f']\n", "no_such_module"),
        ("agents: [\n", "not YAML"),
    ],
)
def test_a_wrong_file_is_refused_naming_what_is_wrong(tmp_path: Path, text: str, says: str) -> None:
    with pytest.raises(ConfigError) as raised:
        configured_runners(write(tmp_path, text), work_tree=tmp_path, offline=True)
    assert says in str(raised.value) and "agents.yaml" in str(raised.value)


def test_a_missing_file_is_refused_naming_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"nope\.yaml"):
        load_agents(tmp_path / "nope.yaml")


def test_the_repositorys_agents_file_loads() -> None:
    config = load_agents(ROOT / "agents.yaml")
    runners = build_runners(config, work_tree=ROOT, offline=False)
    tools = runners["author"].tools
    assert {name: t.confirm_required for name, t in tools.items()} == {
        "git_push": True,
        "list_files": False,
        "read_file": False,
        "git_log": False,
    }


def test_the_template_lets_the_agent_functions_invoke_exactly_the_configured_models() -> None:
    from tests.support.lambda_stack import template

    loaded = template()
    default = loaded["Parameters"]["BedrockModelIds"]["Default"]
    assert default.split(",") == model_ids(load_agents(ROOT / "agents.yaml"))
    allowed = {
        name
        for name, resource in loaded["Resources"].items()
        if resource["Type"] == "AWS::Serverless::Function"
        for policy in resource["Properties"].get("Policies", [])
        for statement in policy["Statement"]
        if statement["Action"] == "bedrock:InvokeModelWithResponseStream"
    }
    assert allowed == {"InvokeFunction", "WorkerFunction"}  # the functions that run agents, and only they
    env = loaded["Globals"]["Function"]["Environment"]["Variables"]
    assert env["RIVERBEAM_AGENTS_FILE"] == "/opt/agents.json"


def test_the_layer_carries_the_agents_file_at_its_root_as_json(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "build_layer.py"), str(tmp_path), "--no-deps"],
        check=True,
        capture_output=True,
        timeout=300,
    )
    shipped = tmp_path / "agents.json"
    assert json.loads(shipped.read_text()) == yaml.safe_load((ROOT / "agents.yaml").read_text())
    assert load_agents(shipped) == load_agents(ROOT / "agents.yaml")
    assert not (tmp_path / "agents.yaml").exists()


def test_an_agents_file_that_is_not_yaml_fails_the_build(tmp_path: Path) -> None:
    source = tmp_path / "repo" / "agents.yaml"
    source.parent.mkdir()
    source.write_text("agents: [\n")
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; sys.path.insert(0, sys.argv[1]); import build_layer; "
            "build_layer.write_agents_json(*map(build_layer.Path, sys.argv[2:]))",
            str(ROOT / "scripts"),
            str(source),
            str(tmp_path),
            str(tmp_path / "site"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0 and "agents.yaml could not be read as YAML" in done.stderr, done.stderr
    assert not (tmp_path / "agents.json").exists()


@pytest.mark.parametrize(
    ("text", "says"),
    [('{"agents": [', "not JSON"), ('{"agents": {"a": {"colour": 1}}}', "agents.a.colour")],
)
def test_a_json_agents_file_is_refused_naming_what_is_wrong(tmp_path: Path, text: str, says: str) -> None:
    path = tmp_path / "agents.json"
    path.write_text(text)
    with pytest.raises(ConfigError) as raised:
        load_agents(path)
    assert says in str(raised.value) and "agents.json" in str(raised.value)

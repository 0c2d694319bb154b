"""The agents' policies at `sam build` (scripts/agent_policies.py, run by scripts/build_layer.py): each
policy agents.yaml names is checked with Cedar and shipped beside agents.json; a file that does not parse,
is missing, or lies outside the agents file's folder fails the build with the file named."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
POLICY = '@id("no-force") forbid (principal, action, resource) when { context.args has force };\n'


def shipping() -> ModuleType:
    spec = importlib.util.spec_from_file_location("agent_policies", ROOT / "scripts" / "agent_policies.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def layer(tmp_path: Path, policy: str) -> tuple[Path, Path]:
    """An agents file naming `policy` (as agents.yaml and, as the build wrote it, agents.json)."""
    source, target = tmp_path / "repo", tmp_path / "layer"
    source.mkdir()
    target.mkdir()
    document = {"agents": {"author": {"tools": ["git_push"], "policy": policy}, "reader": {}}}
    (source / "agents.yaml").write_text(json.dumps(document))
    (target / "agents.json").write_text(json.dumps(document))
    return source / "agents.yaml", target


def test_a_policy_is_shipped_beside_agents_json(tmp_path: Path) -> None:
    agents, target = layer(tmp_path, "policies/author.cedar")
    (agents.parent / "policies").mkdir()
    (agents.parent / "policies" / "author.cedar").write_text(POLICY)
    shipping().ship_policies(agents, target)
    assert (target / "policies" / "author.cedar").read_text() == POLICY


def test_a_policy_that_does_not_parse_fails_the_build_naming_the_line(tmp_path: Path) -> None:
    agents, target = layer(tmp_path, "author.cedar")
    (agents.parent / "author.cedar").write_text(POLICY + "\npermit (principal, action, resource) when { };\n")
    with pytest.raises(SystemExit, match=r"author\.cedar, line 3: "):
        shipping().ship_policies(agents, target)
    assert not (target / "author.cedar").exists()


@pytest.mark.parametrize(("named", "words"), [("absent.cedar", "does not exist"), ("../x.cedar", "under")])
def test_a_missing_or_outside_policy_fails_the_build(tmp_path: Path, named: str, words: str) -> None:
    agents, target = layer(tmp_path, named)
    with pytest.raises(SystemExit, match=f"agents.author.policy: .*{words}"):
        shipping().ship_policies(agents, target)

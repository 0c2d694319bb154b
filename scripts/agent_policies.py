"""The agents' approval policies at build time (scripts/build_layer.py): each `policy:` that agents.yaml
names is checked with Cedar (a file that does not parse fails the build, naming the file and the line) and
shipped in the layer beside agents.json, at the same path relative to it, where riverbeam.agent.policies
reads it (/opt/<path> once Lambda mounts the layer).

The check runs cedarpy in this interpreter, installed into a scratch folder for it where it is missing
(pip), and finds the line as riverbeam.policy does (its syntax module, loaded from its file: the layer's
packages may be built for another Python than this one)."""

from __future__ import annotations

import importlib
import importlib.util
import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SYNTAX = ROOT / "layers" / "riverbeam" / "riverbeam" / "policy" / "syntax.py"


def named_policies(agents_json: Path) -> dict[str, str]:
    """agent -> the policy path agents.json names for it."""
    document = json.loads(agents_json.read_text(encoding="utf-8")) or {}
    agents = document.get("agents") or {}
    return {
        name: spec["policy"] for name, spec in agents.items() if isinstance(spec, dict) and spec.get("policy")
    }


def _cedarpy() -> ModuleType:
    try:
        return importlib.import_module("cedarpy")
    except ImportError:
        scratch = tempfile.mkdtemp(prefix="riverbeam-cedarpy-")
        pip = [sys.executable, "-m", "pip", "install", "--quiet", "--target", scratch, "cedarpy"]
        if subprocess.run(pip, capture_output=True, text=True, check=False).returncode != 0:
            raise SystemExit(
                "build_layer: cedarpy cannot be installed to check the agents' policies"
            ) from None
        sys.path.insert(0, scratch)
        return importlib.import_module("cedarpy")


def _error_line() -> Callable[[Callable[[str], Any], str], int]:
    spec = importlib.util.spec_from_file_location("riverbeam_policy_syntax", SYNTAX)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    found: Callable[[Callable[[str], Any], str], int] = module.error_line
    return found


def check(path: Path) -> None:
    """SystemExit naming the file and the line where the policy does not parse."""
    parse = _cedarpy().PolicySet.from_str
    text = path.read_text(encoding="utf-8")
    try:
        parse(text)
    except ValueError as error:
        raise SystemExit(f"build_layer: {path}, line {_error_line()(parse, text)}: {error}") from None


def ship_policies(agents_file: Path, target: Path) -> None:
    """Check each policy agents.yaml names and copy it beside TARGET/agents.json."""
    for agent, named in named_policies(target / "agents.json").items():
        relative = Path(named)
        if relative.is_absolute() or ".." in relative.parts:
            raise SystemExit(
                f"build_layer: agents.{agent}.policy: {named} must be a path under {agents_file.parent}"
            )
        source = agents_file.parent / relative
        if not source.is_file():
            raise SystemExit(f"build_layer: agents.{agent}.policy: {source} does not exist")
        check(source)
        (target / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target / relative)

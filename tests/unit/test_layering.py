"""The layers stay apart, read from the source: only riverbeam.aws knows Lambda (Powertools), the
pipeline never imports the adapters, and the adapters read and write nothing through the store
themselves: every read and write goes through the pipeline (RiverBeam)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from beam_store import BeamStore

ROOT = Path(__file__).resolve().parents[2]
RIVERBEAM = ROOT / "layers" / "riverbeam" / "riverbeam"
BEAM_STORE = ROOT / "store" / "beam_store"
AWS = RIVERBEAM / "aws"
# the store's own methods, and the ways to reach a store
STORE_CALLS = {name for name in dir(BeamStore) if not name.startswith("_")} | {"store", "_store", "set_store"}


def modules(*roots: Path) -> Iterator[tuple[Path, ast.Module]]:
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            yield path, ast.parse(path.read_text(), str(path))


def imported(tree: ast.Module) -> Iterator[tuple[int, str]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            yield node.lineno, "." * node.level + (node.module or "")


def test_only_riverbeam_aws_imports_powertools() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{line} {name}"
        for path, tree in modules(RIVERBEAM, BEAM_STORE)
        if AWS not in path.parents
        for line, name in imported(tree)
        if name.split(".")[0] == "aws_lambda_powertools"
    ]
    assert found == []


def test_the_pipeline_never_imports_the_adapters() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{line} {name}"
        for path, tree in modules(RIVERBEAM / "pipeline", BEAM_STORE)
        for line, name in imported(tree)
        if "aws" in name.lstrip(".").split(".") and not name.startswith("boto")
    ]
    assert found == []


def test_the_adapters_reach_the_store_only_through_the_pipeline() -> None:
    assert {"get_session", "commit", "list_connections", "reserve_session"} <= STORE_CALLS
    found = [
        f"{path.relative_to(ROOT)}:{node.lineno} .{node.attr}"
        for path, tree in modules(AWS)
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr in STORE_CALLS
    ]
    assert found == []


def _riverbeam_names(tree: ast.Module) -> set[str]:
    """The names a module binds to riverbeam's modules and objects (`from riverbeam.aws import runtime`)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "riverbeam":
            names |= {alias.asname or alias.name for alias in node.names}
        elif isinstance(node, ast.Import):
            names |= {
                (a.asname or a.name).split(".")[0] for a in node.names if a.name.split(".")[0] == "riverbeam"
            }
    return names


def _root(node: ast.expr) -> str | None:
    while isinstance(node, ast.Attribute | ast.Subscript):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def test_the_local_stack_configures_the_functions_and_patches_nothing_of_theirs() -> None:
    """The local stack gives the functions what a deployment gives them (their environment, as the template
    sets it): no module of riverbeam_local assigns into riverbeam's modules or objects (runtime's
    factories, say), calls setattr on them, or hands a RiverBeam an event sink of its own."""
    found = []
    for path, tree in modules(ROOT / "local" / "riverbeam_local"):
        ours = _riverbeam_names(tree)
        for node in ast.walk(tree):
            targets: list[ast.expr] = []
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, ast.AugAssign | ast.AnnAssign):
                targets = [node.target]
            patched = [
                t for t in targets if isinstance(t, ast.Attribute | ast.Subscript) and _root(t) in ours
            ]
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr":
                patched += [a for a in node.args[:1] if _root(a) in ours]
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                patched += [node.func] if node.func.attr == "set_event_sink" else []
            found += [f"{path.relative_to(ROOT)}:{node.lineno}" for _ in patched]
    assert found == []

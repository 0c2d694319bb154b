"""Every module of riverbeam, beam_store and the local tooling (riverbeam_local) stays readable: at most 400
lines, no function over 60, read from the source with `ast` (a function counts from its `def` to its last
line)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = (
    ROOT / "layers" / "riverbeam" / "riverbeam",
    ROOT / "store" / "beam_store",
    ROOT / "local" / "riverbeam_local",
)
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60


def sources() -> list[Path]:
    return [path for root in SOURCES for path in sorted(root.rglob("*.py"))]


def test_no_module_is_over_400_lines() -> None:
    found = {str(p.relative_to(ROOT)): len(p.read_text().splitlines()) for p in sources()}
    assert len(found) > 40
    assert any(path.startswith("local/riverbeam_local/stack/") for path in found)
    assert {path: n for path, n in found.items() if n > MAX_MODULE_LINES} == {}


def test_no_function_is_over_60_lines() -> None:
    too_long = {}
    for path in sources():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    too_long[f"{path.relative_to(ROOT)}:{node.lineno} {node.name}"] = lines
    assert too_long == {}

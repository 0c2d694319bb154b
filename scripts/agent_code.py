"""Your own code in the deployment, at build time (scripts/build_layer.py): the folder agents.yaml names as
`code` (relative to the file; `agent_code` by default) is copied into the Riverbeam layer's python/, so the
`module:function` tools and runners agents.yaml names import in Lambda as they do on your machine. Each
package (a folder with __init__.py) and module (a .py file) at the folder's top goes; one whose name the
layer already has (riverbeam, pydantic...) fails the build, naming it. No folder: nothing to ship."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

DEFAULT_FOLDER = "agent_code"


def code_folder(agents_file: Path, agents_json: Path) -> Path:
    """The folder agents.yaml names as `code` (agents.json is the same document, already read)."""
    document = json.loads(agents_json.read_text(encoding="utf-8")) or {}
    return (agents_file.parent / (document.get("code") or DEFAULT_FOLDER)).resolve()


def ship_agent_code(agents_file: Path, agents_json: Path, site: Path) -> list[str]:
    """Copy the code folder's packages and modules into `site`; what it put there (`pkg`, `module.py`)."""
    folder = code_folder(agents_file, agents_json)
    if not folder.is_dir():
        return []
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.pyo", "tests", "test_*.py")
    shipped = []
    for entry in sorted(folder.iterdir()):
        is_package = entry.is_dir() and (entry / "__init__.py").is_file()
        is_module = entry.is_file() and entry.suffix == ".py"
        if not (is_package or is_module):
            continue
        name = entry.name if is_package else entry.stem
        if (site / entry.name).exists() or (site / name).exists():
            raise SystemExit(f"build_layer: {entry} would replace {name!r}, which the layer has: rename it")
        if is_package:
            shutil.copytree(entry, site / entry.name, ignore=ignore)
        else:
            shutil.copy2(entry, site / entry.name)
        shipped.append(entry.name)
    return shipped

"""The manual (README.md, CHANGELOG.md, docs/, mkdocs.yml) stays true to the code: it builds with every link
and heading checked, the API page names every route of docs/openapi.json, every frame and every error code
the code can answer (with its status), the deploying page every parameter of template.yaml, the agents.yaml
page every setting, the architecture page every module (and no module that is gone), and the Python page's
examples run and print what they say."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from riverbeam.agent.config import BUILTIN_TOOLS, AgentSpec, Inference, ToolSettings, Window
from riverbeam.errors import CATALOGUE
from riverbeam.models import FrameHeader
from riverbeam.pipeline.sweep import ActionExpiredFrame
from riverbeam_local.stack.template import read as read_template

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
CODE_ROOTS = ("layers", "store", "local")
CODE_SUFFIXES = {".py", ".js", ".html"}
# the source roots whose modules the architecture page maps, with the prefix the page names them by
MODULE_ROOTS = {
    "riverbeam/": ROOT / "layers" / "riverbeam" / "riverbeam",
    "beam_store/": ROOT / "store" / "beam_store",
    "riverbeam_local/": ROOT / "local" / "riverbeam_local",
    "functions/": ROOT / "functions",
}
FIRST_COMMANDS = [
    "bash scripts/bootstrap && .venv/bin/riverbeam demo",
    "bash scripts/bootstrap --browser && .venv/bin/pytest",
]


def page(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def manual() -> dict[Path, str]:
    files = [README, ROOT / "CHANGELOG.md", *sorted(DOCS.glob("*.md"))]
    return {path: path.read_text(encoding="utf-8") for path in files}


def source_files(root: Path) -> list[Path]:
    skipped = {"__pycache__", "build"}
    return [p for p in root.rglob("*") if p.suffix in CODE_SUFFIXES and not skipped & set(p.parts)]


def test_the_manual_builds_with_every_link_and_heading_checked(tmp_path: Path) -> None:
    # mkdocs.yml: strict, and broken links, missing anchors and pages left out of the nav are warnings
    # (never --quiet: it hides the warnings --strict counts, and the build passes)
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert built.returncode == 0, f"mkdocs build --strict failed (bootstrap installs mkdocs):\n{built.stderr}"
    assert (tmp_path / "site" / "api" / "index.html").is_file()


def test_the_readme_is_a_front_page_that_starts_with_the_two_commands() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    indented = [line.strip() for line in text.splitlines() if line.startswith("    ") and line.strip()]
    assert [line.split("  #")[0].strip() for line in indented[:2]] == FIRST_COMMANDS


def test_every_relative_link_of_the_readme_and_changelog_leads_to_a_file() -> None:
    for path in (README, ROOT / "CHANGELOG.md"):
        targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", path.read_text(encoding="utf-8"))
        missing = [t for t in targets if "://" not in t and not (path.parent / t).exists()]
        assert missing == [], f"{path.name} links to files that do not exist: {missing}"


def test_the_manual_names_no_issue_numbers_and_points_nowhere_outside_the_clone() -> None:
    for path, text in manual().items():
        assert not re.search(r"\bissues?\s+#?\d+", text, re.IGNORECASE), f"{path.name} names an issue number"
        for outside in ("../shared", "CONTRACT.md", "DESIGN.md"):
            assert outside not in text, f"{path.name} points at {outside}, which a clone does not have"


def test_the_api_page_names_every_route_of_the_openapi_document() -> None:
    document = json.loads(page("openapi.json"))
    text = page("api.md")
    routes = [f"`{method.upper()} {path}`" for path, ops in document["paths"].items() for method in ops]
    assert routes, "docs/openapi.json lists no route"
    missing = [r for r in routes if r not in text]
    assert missing == [], f"routes of docs/openapi.json missing from docs/api.md: {missing}"


def catalogue_rows(text: str) -> dict[str, int]:
    return {code: int(status) for code, status in re.findall(r"^\| (BEM-\d{3}) \| (\d{3}) \|", text, re.M)}


def test_every_error_code_the_code_uses_is_on_the_api_page_with_its_status() -> None:
    used = {
        code
        for root in CODE_ROOTS
        for path in source_files(ROOT / root)
        for code in re.findall(r"BEM-\d{3}", path.read_text(encoding="utf-8"))
    }
    assert "BEM-066" in used and "BEM-500" in used  # the grep found the code's codes
    assert used - set(CATALOGUE) == set(), "codes used in the code but missing from riverbeam.CATALOGUE"
    rows = catalogue_rows(page("api.md"))
    missing = sorted(set(CATALOGUE) - set(rows))
    assert missing == [], f"codes missing from docs/api.md's catalogue: {missing}"
    wrong = {code: status for code, status in rows.items() if CATALOGUE.get(code, (0, ""))[0] != status}
    assert wrong == {}, f"docs/api.md gives these codes a status the catalogue does not: {wrong}"


def test_the_api_page_shows_every_frame_type_with_its_fields() -> None:
    text = page("api.md")
    header = set(FrameHeader.model_fields)
    for model in {*FrameHeader.__subclasses__(), ActionExpiredFrame}:
        kind = model.model_fields["type"].default
        row = re.search(rf"^\| `{kind}` \|(.*)$", text, re.M)
        assert row is not None, f"frame type {kind} missing from docs/api.md"
        fields = set(model.model_fields) - header - {"type"}
        unnamed = sorted(f for f in fields if f"`{f}`" not in row.group(1))
        assert unnamed == [], f"docs/api.md's row of {kind} does not name {unnamed}"


def test_the_deploying_page_names_every_parameter_of_the_template() -> None:
    parameters = read_template(ROOT)["Parameters"]
    rows = set(re.findall(r"^\| `(\w+)` \|", page("deploying.md"), re.M))
    assert set(parameters) - rows == set(), "template.yaml parameters missing from docs/deploying.md"
    assert rows & {"AuthMode", "JwtIssuer"} == {"AuthMode", "JwtIssuer"}


def test_the_agents_yaml_page_names_every_setting_and_built_in_tool() -> None:
    text = page("agents-yaml.md")
    settings = {name for model in (AgentSpec, Inference, Window, ToolSettings) for name in model.model_fields}
    missing = sorted(s for s in settings | set(BUILTIN_TOOLS) if f"`{s}`" not in text)
    assert missing == [], (
        f"agents.yaml settings or built-in tools missing from docs/agents-yaml.md: {missing}"
    )


def mapped_modules() -> set[str]:
    return {
        prefix + path.relative_to(root).as_posix()
        for prefix, root in MODULE_ROOTS.items()
        for path in root.rglob("*.py")
        if "__pycache__" not in path.parts
    }


def test_the_module_map_lists_every_module_and_only_modules_that_exist() -> None:
    prefixes = "|".join(re.escape(p.rstrip("/")) for p in MODULE_ROOTS)
    named = set(re.findall(rf"`((?:{prefixes})/[\w/]*\.py)`", page("architecture.md")))
    modules = mapped_modules()
    assert "riverbeam/pipeline/beam.py" in modules and "functions/worker/app.py" in modules
    assert sorted(modules - named) == [], "modules missing from docs/architecture.md's module map"
    assert sorted(named - modules) == [], "docs/architecture.md names modules that do not exist"


def test_the_python_page_examples_run_and_print_what_their_comments_say() -> None:
    # the ```python blocks run in order in one namespace (```py blocks need AWS or a server: shown only);
    # a `print(...)  # text` line's comment is a line it prints, unless the comment elides with "..."
    blocks = re.findall(r"^```python\n(.*?)^```", page("python.md"), re.S | re.M)
    assert len(blocks) >= 4
    printed = io.StringIO()
    namespace: dict[str, object] = {}
    with contextlib.redirect_stdout(printed):
        for number, block in enumerate(blocks):
            exec(compile(block, f"docs/python.md, example {number + 1}", "exec"), namespace)
    lines = printed.getvalue().splitlines()
    said = [
        comment.strip()
        for block in blocks
        for comment in re.findall(r"print\(.*\)\s+#\s*(.+)$", block, re.M)
        if "..." not in comment
    ]
    assert len(said) >= 5
    unprinted = [s for s in said if s not in lines]
    assert unprinted == [], f"docs/python.md says these are printed, and they are not: {unprinted}"


def test_the_action_life_is_drawn_with_every_status() -> None:
    diagram = re.search(r"^```mermaid\n(stateDiagram-v2.*?)^```", page("concepts.md"), re.S | re.M)
    assert diagram is not None, "the action's life is a mermaid state diagram"
    moves = set(re.findall(r"^\s*(\S+) --> (\S+?):", diagram.group(1), re.M))
    expected = {("[*]", "pending"), ("pending", "resolved"), ("pending", "cancelled"), ("pending", "expired")}
    assert expected <= moves, f"the diagram lacks {expected - moves}"
    assert any(end == "denied" for _, end in moves), "the diagram leaves out denied"

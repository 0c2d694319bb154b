"""Two of the CLI's edges, as a person meets them: an agents file giving an agent two tools of one name
(a `git_push` of its own that asks nobody beside the built-in) stops `riverbeam dev` before it starts, in
one line naming the agent, the tool and both entries (exit 2); `riverbeam trace` prints a traces file whose
spans form cycles or repeat an id, each span once, and says which."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from riverbeam_local.clients import trace_tree

from tests.support.devstack import free_port, riverbeam
from tests.unit.test_trace_file import ASKING, write_story

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

QUIET_PUSH = '''
def git_push(ref: str) -> str:
    """Push `ref`, asking nobody."""
    return "pushed " + ref
'''


def test_two_tools_of_one_name_stop_the_stack_naming_the_agent_the_tool_and_both(tmp_path: Path) -> None:
    (tmp_path / "agent_code").mkdir()
    (tmp_path / "agent_code" / "quiet.py").write_text(QUIET_PUSH, encoding="utf-8")
    agents = tmp_path / "agents.yaml"
    agents.write_text('agents:\n  author:\n    tools: [git_push, "quiet:git_push"]\n', encoding="utf-8")
    dev = ["dev", "--data-dir", str(tmp_path / "data"), "--port", str(free_port()), "--agents", str(agents)]
    done = subprocess.run(
        [sys.executable, "-m", "riverbeam_local", *dev], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip().count("\n") == 0, done.stderr
    line = done.stderr
    assert "agents.author.tools" in line and "'git_push'" in line, line
    assert "from 'git_push' and from 'quiet:git_push'" in line, line


def _spans(line: str) -> list[dict[str, object]]:
    return [s for r in json.loads(line)["resourceSpans"] for sc in r["scopeSpans"] for s in sc["spans"]]


def cyclic_story(path: Path) -> tuple[str, str, str]:
    """The story of test_trace_file with its first run a parent of its own child (a cycle of two), the
    resuming run its own parent, and the tool's span written twice; the ids of the cyclic runs and of
    the tool's span."""
    write_story(path)
    lines = path.read_text().splitlines()
    spans = [_spans(line)[0] for line in lines]
    by_name = {}
    for line, span in zip(lines, spans, strict=True):
        by_name.setdefault(str(span["name"]), []).append((line, span))
    (_, chat), (tool_line, tool) = by_name["chat offline"][0], by_name["execute_tool git_push"][0]
    asking, resuming = (s for _, s in by_name["invoke_agent author"][:2])
    edited = []
    for line, span in zip(lines, spans, strict=True):
        if span is asking:
            line = line.replace('"spanId"', f'"parentSpanId": "{chat["spanId"]}", "spanId"', 1)
        elif span is resuming:
            line = line.replace('"spanId"', f'"parentSpanId": "{resuming["spanId"]}", "spanId"', 1)
        edited.append(line)
        if span is tool:
            edited.append(tool_line)
    path.write_text("\n".join(edited) + "\n")
    return str(asking["spanId"]), str(resuming["spanId"]), str(tool["spanId"])


def test_trace_prints_each_span_once_and_names_cycles_and_duplicates(tmp_path: Path) -> None:
    asking, resuming, tool = cyclic_story(tmp_path / trace_tree.TRACES_FILE)
    done = riverbeam("trace", ASKING, "--data-dir", str(tmp_path), timeout=120)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert sum(line.strip().startswith("invoke_agent author") for line in lines) == 2, done.stdout
    assert sum(line.strip().startswith("chat offline") for line in lines) == 1, done.stdout
    assert sum(line.strip().startswith("execute_tool git_push") for line in lines) == 1, done.stdout
    assert "waited 3 min 12 s for a person" in done.stdout
    said = done.stderr.splitlines()
    assert any("came more than once" in s and tool in s for s in said), done.stderr
    assert any("cycles" in s and asking in s and resuming in s for s in said), done.stderr

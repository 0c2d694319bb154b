"""The example approval policy through `riverbeam dev --agents docs/examples/policy/agents.yaml` as a child
process and the `riverbeam` command, as a person runs them: a push of docs/* runs unasked (its Action
resolved by the policy), a push of main asks; a policy file that does not parse stops the stack before it
starts, in one line naming the file and the line (exit 2)."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from riverbeam_local.clients.dev_process import DevProcess, running

from tests.support.devstack import assert_none_left, free_port, remote_refs, riverbeam, secret_of, work_commit

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "docs" / "examples" / "policy" / "agents.yaml"


@pytest.fixture
def dev(tmp_path: Path) -> Iterator[DevProcess]:
    data_dir = tmp_path / "data"
    with running(data_dir, args=("--agents", str(EXAMPLE))) as process:
        yield process
    assert_none_left(data_dir)


def run(dev: DevProcess, *args: str) -> Any:
    done = riverbeam(*args, "--url", dev.http_url, "--user", "u1", "--secret", secret_of(dev))
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    return json.loads(done.stdout)


def test_a_docs_push_runs_unasked_and_a_main_push_asks(dev: DevProcess) -> None:
    session_id = str(uuid.uuid4())
    result = run(dev, "invoke", "--text", "Push docs/update", "--session", session_id)
    assert not result["interrupted"]
    assert remote_refs(dev.data_dir)["refs/heads/docs/update"] == work_commit(dev.data_dir, "docs/update")
    messages = run(dev, "get", "messages", session_id)["messages"]
    [call] = [p for m in messages for p in m["content"] if p["type"] == "tool_call"]
    action = run(dev, "get", "action", call["tool_call_id"])  # the call's id is its action's
    assert action["status"] == "resolved" and action["outcome"]["status"] == "ok"
    assert action["response"]["by"] == {"kind": "policy", "policy_ids": ["docs-unattended"]}

    asked = run(dev, "invoke", "--text", "Push main", "--session", session_id)
    assert asked["interrupted"] and asked["action_required"][0]["args"] == {"ref": "main"}
    assert "refs/heads/main" not in remote_refs(dev.data_dir)


def test_a_policy_that_does_not_parse_stops_the_stack_naming_its_line(tmp_path: Path) -> None:
    agents = tmp_path / "agents.yaml"
    agents.write_text("agents:\n  author:\n    tools: [git_push]\n    policy: author.cedar\n")
    (tmp_path / "author.cedar").write_text('@id("a") permit (principal, action, resource)\n  when { ;\n')
    dev = ["dev", "--data-dir", str(tmp_path / "data"), "--port", str(free_port()), "--agents", str(agents)]
    done = subprocess.run(
        [sys.executable, "-m", "riverbeam_local", *dev],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip().count("\n") == 0
    assert f"{tmp_path / 'author.cedar'}, line 2:" in done.stderr and "agents.author.policy" in done.stderr

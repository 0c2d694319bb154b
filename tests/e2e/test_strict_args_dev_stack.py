"""What is decided is what runs (issue 34), through `riverbeam dev` as a child process with an agents file, a
tool of one's own and a Cedar policy, as a person runs them (`riverbeam invoke`, the HTTP API): args a lax
check would coerce past the policy (`"force": "true"`, `"replicas": "50"`, `50.0`) are never put to a
person, a decimal is decided as a number, and an approver's edit that the example policy forbids
(`release/*`) is refused with BEM-081, nothing resolved."""

from __future__ import annotations

import json
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from riverbeam_local.clients.dev_process import DevProcess

from tests.support.devstack import http, invoke_over_http, riverbeam, running_with_agents, secret_of

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

EXAMPLE_POLICY = Path(__file__).resolve().parents[2] / "docs" / "examples" / "policy" / "author.cedar"
AGENTS = """\
agents:
  author:
    tools: [git_push]
    policy: author.cedar
  releaser:
    tools: [strict_tools:deploy]
    policy: releaser.cedar
"""
TOOL = '''\
from riverbeam import tool


@tool(confirm_required=True)
def deploy(service: str, replicas: int = 1, force: bool = False, ratio: float = 0.0) -> dict:
    """Deploy a service (this one only says what it was given)."""
    return {"deployed": service, "replicas": replicas, "force": force, "ratio": ratio}
'''
RULES = """\
@id("no-force") forbid (principal, action, resource == Tool::"deploy")
  when { context.args has force && context.args.force == true };
@id("at-most-5") forbid (principal, action, resource == Tool::"deploy")
  when { context.args has replicas && context.args.replicas > 5 };
@id("ratio-cap") forbid (principal, action, resource == Tool::"deploy")
  when { context.args has ratio && context.args.ratio.greaterThan(decimal("0.5")) };
"""


@pytest.fixture
def dev(tmp_path: Path) -> Iterator[DevProcess]:
    (tmp_path / "agent_code").mkdir()
    (tmp_path / "agent_code" / "strict_tools.py").write_text(TOOL)
    (tmp_path / "releaser.cedar").write_text(RULES)
    shutil.copy(EXAMPLE_POLICY, tmp_path / "author.cedar")
    with running_with_agents(tmp_path, AGENTS) as process:
        yield process


def call(dev: DevProcess, session_id: str, args: dict[str, Any]) -> dict[str, Any]:
    """`riverbeam invoke` of the releaser: the offline model proposes exactly this deploy."""
    text = "call deploy " + json.dumps({"service": "web", **args})
    flags = ("--url", dev.http_url, "--user", "u1", "--secret", secret_of(dev))
    done = riverbeam("invoke", "--agent", "releaser", "--text", text, "--session", session_id, *flags)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    return dict(json.loads(done.stdout))


def actions(dev: DevProcess, session_id: str) -> list[dict[str, Any]]:
    status, listed = http(dev, "GET", f"/sessions/{session_id}/actions?user_id=u1")
    assert status == 200, listed
    return list(listed["actions"])


def tool_results(dev: DevProcess, session_id: str) -> list[dict[str, Any]]:
    status, listed = http(dev, "GET", f"/sessions/{session_id}/messages?user_id=u1")
    assert status == 200, listed
    return [p for m in listed["messages"] if m["role"] == "tool" for p in m["content"]]


def test_args_a_lax_check_would_coerce_past_the_policy_are_never_asked(dev: DevProcess) -> None:
    session_id = str(uuid.uuid4())
    coercible = [{"force": "true"}, {"force": 1}, {"force": "yes"}, {"replicas": "50"}, {"replicas": 50.0}]
    for args in coercible:
        result = call(dev, session_id, args)
        assert not result["interrupted"] and result["action_required"] == [], (args, result)
        assert "invalid arguments" in result["content"][0]["text"]
    assert actions(dev, session_id) == []  # nothing pending, nothing asked
    results = tool_results(dev, session_id)
    assert [(r["status"], r["error"]["code"]) for r in results] == [("error", "BEM-332")] * len(coercible)
    assert all(next(iter(a)) + ":" in r["error"]["message"] for a, r in zip(coercible, results, strict=True))

    decimal = call(dev, session_id, {"ratio": 0.75})  # a decimal reaches Cedar as one
    assert not decimal["interrupted"]
    [denied] = actions(dev, session_id)
    assert denied["status"] == "denied" and denied["response"]["by"]["policy_ids"] == ["ratio-cap"]
    fits = call(dev, session_id, {"replicas": 2})  # args that fit and no forbid covers: a person decides
    assert fits["interrupted"] and fits["action_required"][0]["args"] == {"service": "web", "replicas": 2}


def test_an_approvers_edit_a_forbid_covers_is_refused_and_nothing_resolves(dev: DevProcess) -> None:
    session_id = str(uuid.uuid4())
    asked = invoke_over_http(dev, session_id, "Push main")
    [action] = asked["action_required"]
    envelope = {
        "action_id": action["action_id"],
        "kind": "confirmation",
        "request_id": str(uuid.uuid4()),
        "status": "submitted",
        "payload": {"tool": "git_push", "args": {"ref": "main"}},
        "edited_args": {"ref": "release/x"},
    }
    resume = {
        "agent_name": "author",
        "session_id": session_id,
        "interaction_id": asked["interaction_id"],
        "actions": [envelope],
        "auth_context": {"user_id": "u1"},
    }
    status, refused = http(dev, "POST", "/resume", resume)
    assert (status, refused["error"]["code"]) == (400, "BEM-081"), refused
    assert "no-release" in refused["error"]["message"]
    status, stored = http(dev, "GET", f"/actions/{action['action_id']}?user_id=u1")
    assert status == 200 and stored["status"] == "pending" and stored.get("response") is None
    assert tool_results(dev, session_id) == []

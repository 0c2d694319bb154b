"""Grants and groups through `riverbeam dev` as a child process, over its HTTP and WebSocket APIs, on a
scripted Bedrock model (tests.support.fake_bedrock) that can make several calls in a run:
- a grant revoked while a run works covers none of that run's later calls;
- a grant made for one agent's tool covers no other agent's tool of the same name;
- a grant made before its tool needed four eyes covers nothing once it does;
- a run resumed by an approver decides its requester's later calls with the requester's groups, and the
  approver's edited args too;
- a WebSocket invoke decides with the body's groups, as HTTP does;
- the inbox never lists a four-eyes action to its own requester, whatever their groups."""

from __future__ import annotations

import asyncio
import json
import re
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from riverbeam_local.clients.dev_process import DevProcess, running
from websockets.asyncio.client import connect

from tests.support.bedrock import MODEL, text_events, tool_events
from tests.support.devstack import (
    TIMEOUT_SECONDS,
    assert_none_left,
    ended_run,
    git,
    http,
    remote_refs,
    running_with_agents,
    secret_of,
)
from tests.support.fake_bedrock import ENDPOINT_VARIABLE, fake_bedrock

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

AGENTS_YAML = f"""
agents:
  granter:
    model_id: {MODEL}
    tools: [git_push]
  deployer:
    model_id: {MODEL}
    tools: [git_push]
    tool_settings:
      git_push: {{approvers: {{groups: [releasers]}}, self_approval: false}}
  author:
    model_id: {MODEL}
    tools: [git_push]
    policy: author.cedar
    tool_settings:
      git_push: {{approvers: {{groups: [releasers]}}}}
"""
# releasers push unattended; interns never push a release branch
AUTHOR_POLICY = """
@id("releasers-unattended")
permit (principal in Group::"releasers", action == Action::"run_unattended", resource == Tool::"git_push");
@id("no-release-for-interns")
forbid (principal in Group::"interns", action == Action::"run", resource == Tool::"git_push")
when { context.args.ref like "release/*" };
"""
# what the model does before its first call of an interaction, where the person's words ask it to
before_first_call: dict[str, Callable[[], None]] = {}


def _script(request: dict[str, Any]) -> list[dict[str, Any]]:
    """'push A then push B ...': a git_push call per ref, one a turn; 'revoke ...': before the first
    call, the test's `before_first_call["revoke"]` (the session's grants revoked over HTTP)."""
    messages = request["messages"]
    asked = max(
        i
        for i, m in enumerate(messages)
        if m["role"] == "user" and any("text" in part for part in m["content"])
    )
    text = " ".join(p["text"] for p in messages[asked]["content"] if "text" in p).lower()
    done = sum(1 for m in messages[asked:] for p in m["content"] if "toolResult" in p)
    refs = re.findall(r"push (\S+)", text)
    if done >= len(refs):
        return text_events("Done.")
    if done == 0 and "revoke" in text:
        before_first_call.pop("revoke")()
    call = (f"tooluse_{uuid.uuid4().hex}", "git_push", [json.dumps({"ref": refs[done]})])
    return tool_events(call, text=f"I will push {refs[done]}.")


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevProcess]:
    root = tmp_path_factory.mktemp("grants-groups")
    (root / "agents.yaml").write_text(AGENTS_YAML, encoding="utf-8")
    (root / "author.cedar").write_text(AUTHOR_POLICY, encoding="utf-8")
    data_dir = root / "data"
    with fake_bedrock(_script) as url:
        args = ("--agents", str(root / "agents.yaml"), "--model", "bedrock")
        with running(data_dir, args=args, env={ENDPOINT_VARIABLE: url}) as process:
            git(data_dir, "work", "branch", "-f", "release/x", "main")
            yield process
    assert_none_left(data_dir)


def invoke(
    dev: DevProcess, agent: str, session_id: str, text: str, user: str = "u1", groups: tuple[str, ...] = ()
) -> dict[str, Any]:
    body = {
        "agent_name": agent,
        "session_id": session_id,
        "content": [{"type": "text", "text": text}],
        "auth_context": {"user_id": user, "groups": list(groups)},
    }
    status, result = http(dev, "POST", "/invoke", body)
    assert status == 200, result
    return dict(result)


def resume(
    dev: DevProcess,
    agent: str,
    asked: dict[str, Any],
    user: str = "u1",
    groups: tuple[str, ...] = (),
    **envelope: Any,
) -> tuple[int, Any]:
    [action] = asked["action_required"]
    body = {
        "agent_name": agent,
        "session_id": asked["session_id"],
        "interaction_id": asked["interaction_id"],
        "actions": [
            {
                "action_id": action["action_id"],
                "kind": "confirmation",
                "request_id": str(uuid.uuid4()),
                "status": "submitted",
                "payload": {"tool": action["tool"], "args": action["args"]},
                **envelope,
            }
        ],
        "auth_context": {"user_id": user, "groups": list(groups)},
    }
    return http(dev, "POST", "/resume", body)


def granted(dev: DevProcess, agent: str, session_id: str) -> dict[str, Any]:
    """A push asked for by `agent` in the session and approved with a grant of git_push: the grant."""
    asked = invoke(dev, agent, session_id, "Push docs/update")
    status, ack = resume(dev, agent, asked, grant="tool")
    assert status == 202, ack
    assert ended_run(dev, ack["run_id"])["status"] == "completed"
    status, listed = http(dev, "GET", f"/sessions/{session_id}/grants?user_id=u1")
    assert status == 200, listed
    [grant] = listed["grants"]
    return dict(grant)


def test_a_grant_revoked_while_the_run_works_covers_none_of_its_later_calls(dev: DevProcess) -> None:
    session_id = str(uuid.uuid4())
    grant = granted(dev, "granter", session_id)
    revoked: list[Any] = []

    def revoke() -> None:  # the owner revokes while the run is on its way to the call
        path = f"/sessions/{session_id}/grants/{grant['grant_id']}?user_id=u1"
        revoked.append(http(dev, "DELETE", path))

    before_first_call["revoke"] = revoke
    result = invoke(dev, "granter", session_id, "Revoke, then push main")
    assert revoked == [(204, None)]
    assert result["interrupted"] and result["action_required"][0]["args"] == {"ref": "main"}
    assert "refs/heads/main" not in remote_refs(dev.data_dir)


def test_a_grant_for_one_agents_tool_covers_no_other_agents_tool_of_that_name(dev: DevProcess) -> None:
    session_id = str(uuid.uuid4())
    grant = granted(dev, "granter", session_id)

    asked = invoke(dev, "deployer", session_id, "Push main")  # four eyes: a releaser must approve
    assert asked["interrupted"] and asked["action_required"][0]["args"] == {"ref": "main"}
    assert "refs/heads/main" not in remote_refs(dev.data_dir)
    assert (grant["tool"], grant["agent_name"]) == ("git_push", "granter")
    unasked = invoke(dev, "granter", session_id, "Push main")  # the granter's grant still covers its own
    assert not unasked["interrupted"]
    status, action = http(dev, "GET", f"/actions/{asked['action_required'][0]['action_id']}?user_id=u1")
    assert status == 200 and action["status"] == "pending"  # the deployer's, still waiting


def test_an_approvers_resume_decides_the_requesters_later_calls_with_the_requesters_groups(
    dev: DevProcess,
) -> None:
    session_id = str(uuid.uuid4())
    asked = invoke(
        dev, "author", session_id, "Push docs/update then push release/x", user="ivy", groups=("interns",)
    )
    assert asked["action_required"][0]["args"] == {"ref": "docs/update"}
    status, ack = resume(dev, "author", asked, user="rita", groups=("releasers",))
    assert status == 202, ack
    assert ended_run(dev, ack["run_id"], owner="ivy")["status"] == "completed"

    status, listed = http(dev, "GET", f"/sessions/{session_id}/actions?user_id=ivy")
    assert status == 200, listed
    by_ref = {a["args"]["ref"]: a for a in listed["actions"]}
    release = by_ref["release/x"]
    assert release["status"] == "denied", release
    assert release["response"]["by"] == {"kind": "policy", "policy_ids": ["no-release-for-interns"]}
    assert "refs/heads/release/x" not in remote_refs(dev.data_dir)
    assert by_ref["docs/update"]["status"] == "resolved"


def test_an_approvers_edited_args_are_decided_with_the_requesters_groups(dev: DevProcess) -> None:
    session_id = str(uuid.uuid4())
    asked = invoke(dev, "author", session_id, "Push docs/update", user="ivy", groups=("interns",))
    status, refused = resume(
        dev, "author", asked, user="rita", groups=("releasers",), edited_args={"ref": "release/x"}
    )
    assert (status, refused["error"]["code"]) == (400, "BEM-081"), refused
    assert "no-release-for-interns" in refused["error"]["message"]
    action_id = asked["action_required"][0]["action_id"]
    status, action = http(dev, "GET", f"/actions/{action_id}?user_id=ivy")
    assert status == 200 and action["status"] == "pending"
    assert "refs/heads/release/x" not in remote_refs(dev.data_dir)


def test_a_websocket_invoke_decides_with_the_bodys_groups_as_http_does(dev: DevProcess) -> None:
    session_id = str(uuid.uuid4())
    url = f"{dev.websocket_url}?session_id={session_id}&user_id=ivy&secret={secret_of(dev)}"

    async def scenario() -> dict[str, Any]:
        async with await asyncio.wait_for(connect(url, open_timeout=None), TIMEOUT_SECONDS) as ws:
            request = {
                "action": "invoke",
                "agent_name": "author",
                "session_id": session_id,
                "content": [{"type": "text", "text": "Push release/x"}],
                "auth_context": {"user_id": "ivy", "groups": ["interns"]},
            }
            await ws.send(json.dumps(request))
            deadline = time.monotonic() + TIMEOUT_SECONDS
            while True:
                left = deadline - time.monotonic()
                assert left > 0, "no done frame"
                frame = json.loads(await asyncio.wait_for(ws.recv(), left))
                if frame.get("type") == "done":
                    return dict(frame["result"])

    result = asyncio.run(scenario())
    assert not result["interrupted"], result
    status, listed = http(dev, "GET", f"/sessions/{session_id}/actions?user_id=ivy")
    assert status == 200 and [a["status"] for a in listed["actions"]] == ["denied"], listed
    assert "refs/heads/release/x" not in remote_refs(dev.data_dir)


def test_the_inbox_never_lists_a_four_eyes_action_to_its_requester_in_an_approving_group(
    dev: DevProcess,
) -> None:
    session_id = str(uuid.uuid4())
    asked = invoke(dev, "deployer", session_id, "Push docs/update", user="rob", groups=("releasers",))
    action_id = asked["action_required"][0]["action_id"]

    def inbox(user: str) -> list[str]:
        status, page = http(dev, "GET", f"/approvals?status=pending&user_id={user}&groups=releasers")
        assert status == 200, page
        return [a["action_id"] for a in page["actions"]]

    assert action_id not in inbox("rob")  # he asked: four eyes rule him out
    assert action_id in inbox("rita")
    status, refused = resume(dev, "deployer", asked, user="rob", groups=("releasers",))
    assert (status, refused["error"]["code"]) == (403, "BEM-090")


PLAIN = "agents:\n  author:\n    tools: [git_push]\n"
FOUR_EYES = """
agents:
  author:
    tools: [git_push]
    tool_settings:
      git_push: {approvers: {users: [ana]}, self_approval: false}
"""


def test_a_grant_made_before_its_tool_needed_four_eyes_covers_nothing(tmp_path: Path) -> None:
    session_id = str(uuid.uuid4())
    with running_with_agents(tmp_path, PLAIN) as before:
        grant = granted(before, "author", session_id)
    with running_with_agents(tmp_path, FOUR_EYES) as after:  # the same data dir, its tool now four eyes
        asked = invoke(after, "author", session_id, "Push main")
        assert asked["interrupted"] and asked["action_required"][0]["args"] == {"ref": "main"}
        assert "refs/heads/main" not in remote_refs(after.data_dir)
        status, listed = http(after, "GET", f"/sessions/{session_id}/grants?user_id=u1")
        assert status == 200 and [g["grant_id"] for g in listed["grants"]] == [grant["grant_id"]]

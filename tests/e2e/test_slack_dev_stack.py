"""Approvals in Slack through `riverbeam dev` as a child process, against a fake Slack Web API on 127.0.0.1
(tests/support/fake_slack.py): the message posted with its blocks (escaped), a click deciding once, quorum
votes, four eyes and unmapped users refused with nothing recorded, forged requests 401, the message updated
with no buttons after a decision or an expiry, Slack down then up."""

from __future__ import annotations

import concurrent.futures
import json
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from riverbeam_local.clients.dev_process import DevProcess, running

from tests.support.devstack import TIMEOUT_SECONDS, assert_none_left, http
from tests.support.fake_slack import (
    BOT_TOKEN,
    SIGNING_SECRET,
    FakeSlack,
    click,
    fake_slack,
    reason_submitted,
    signed,
)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

AGENTS = """
people:
  ana: {slack: UANA, email: ana@example.com, groups: [ops]}
  bo: {slack: UBO, groups: [ops]}
  u1: {slack: UU1}
agents:
  author:
    tools: [git_push]
    notify: {slack: {channel: "#approvals"}}
    tool_settings:
      git_push: {approvers: {groups: [ops]}, required: %d, self_approval: false, expires_after: %d}
"""
HOSTILE = "<!channel> *bold* <@U0ALL> `tick` <https://evil.example|click>"


@contextmanager
def stack(
    tmp_path: Path,
    *,
    required: int = 1,
    expires: int = 3600,
    sweep: float = 60,
    agents_yaml: str | None = None,
) -> Iterator[tuple[DevProcess, FakeSlack]]:
    agents = tmp_path / "agents.yaml"
    agents.write_text(agents_yaml or AGENTS % (required, expires), encoding="utf-8")
    with fake_slack() as slack:
        env = {
            "RIVERBEAM_SLACK_BOT_TOKEN": BOT_TOKEN,
            "RIVERBEAM_SLACK_SIGNING_SECRET": SIGNING_SECRET,
            "SLACK_API_URL": slack.url,
        }
        args = ("--agents", str(agents), "--sweep-seconds", str(sweep))
        with running(tmp_path / "data", env=env, args=args) as dev:
            yield dev, slack
        assert_none_left(tmp_path / "data")


def ask(dev: DevProcess, text: str, user: str = "u1") -> str:
    body = {
        "agent_name": "author",
        "session_id": str(uuid.uuid4()),
        "content": [{"type": "text", "text": text}],
        "auth_context": {"user_id": user},
    }
    status, result = http(dev, "POST", "/invoke", body)
    assert status == 200 and result["interrupted"], result
    return str(result["action_required"][0]["action_id"])


def post(dev: DevProcess, body: bytes, headers: dict[str, str]) -> tuple[int, Any, float]:
    """A request to /channels/slack as Slack sends it (no stack secret, a form body); answer, time."""
    request = urllib.request.Request(
        dev.http_url + "/channels/slack", data=body, headers=headers, method="POST"
    )
    started = time.monotonic()
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as answer:
            text = answer.read()
            return answer.status, json.loads(text) if text else None, time.monotonic() - started
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null"), time.monotonic() - started


def send(dev: DevProcess, payload: dict[str, Any]) -> tuple[int, Any]:
    status, answer, took = post(dev, *signed(payload))
    assert took < 3, f"Slack's 3 seconds: answered in {took:.1f} s"
    return status, answer


def action(dev: DevProcess, action_id: str, user: str = "u1") -> dict[str, Any]:
    status, found = http(dev, "GET", f"/actions/{action_id}?user_id={user}")
    assert status == 200, found
    return dict(found)


def blocks_of(call: dict[str, Any]) -> dict[str, dict[str, Any]]:
    blocks = call["blocks"] if isinstance(call["blocks"], list) else json.loads(call["blocks"])
    return {b["block_id"]: b for b in blocks}


def texts(value: Any, kind: str) -> list[str]:
    """Every text object's text of the given type (`mrkdwn`, `plain_text`) anywhere in `value`."""
    if isinstance(value, dict):
        here = [value["text"]] if value.get("type") == kind and isinstance(value.get("text"), str) else []
        return here + [t for v in value.values() for t in texts(v, kind)]
    if isinstance(value, list):
        return [t for v in value for t in texts(v, kind)]
    return []


def wait_until(check: Any, timeout: float = TIMEOUT_SECONDS) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError("not so in time")


def test_one_message_escaped_forgeries_refused_and_one_decision_of_two_clicks(tmp_path: Path) -> None:
    with stack(tmp_path) as (dev, slack):
        assert "slack on" in dev.urls["Channels"]
        action_id = ask(dev, "call git_push " + json.dumps({"ref": HOSTILE}))
        (posted,) = slack.wait_for("chat.postMessage")
        assert posted["channel"] == "#approvals"
        blocks = blocks_of(posted)
        preformatted = blocks["riverbeam_args"]["elements"][0]["elements"][0]["text"]
        assert json.loads(preformatted) == {"ref": HOSTILE}  # shown as it is, literally
        assert texts(blocks, "mrkdwn") == []  # nothing anyone wrote is ever read as markup
        assert "<" not in posted["text"]  # the notification's text: escaped, it mentions nobody
        assert any(action_id in b.get("block_id", "") for b in blocks.values())
        buttons = blocks[f"riverbeam_decide_{action_id}"]["elements"]
        assert [b["action_id"] for b in buttons] == ["riverbeam_approve", "riverbeam_reject"]
        sha = action(dev, action_id)["args_sha256"]
        assert sha in json.dumps(blocks["riverbeam_hash"])
        assert "u1" in json.dumps(blocks["riverbeam_facts"]) and "0 of 1 approvals" in json.dumps(blocks)

        # forged, stale, tampered, replayed: 401 with a code of their own, and nothing decided
        body, headers = signed(click(action_id, "UANA"), secret="not-the-secret")
        status, refused, _ = post(dev, body, headers)
        assert (status, refused["error"]["code"]) == (401, "BEM-095")
        body, headers = signed(click(action_id, "UANA"), timestamp=int(time.time()) - 600)
        assert post(dev, body, headers)[1]["error"]["code"] == "BEM-096"
        body, headers = signed(click(action_id, "UANA"))
        tampered = body.replace(b"UANA", b"UBO_")
        assert post(dev, tampered, headers)[1]["error"]["code"] == "BEM-095"
        assert post(dev, body[:-3], {k: v for k, v in headers.items() if k != "X-Slack-Signature"})[0] == 401
        body, headers = signed(click(action_id, "UNOBODY"))
        assert post(dev, body, headers)[0] == 200  # a person mapped to nobody: told so, alone
        assert post(dev, body, headers)[1]["error"]["code"] == "BEM-097"
        (told,) = slack.wait_for("chat.postEphemeral")
        assert told["user"] == "UNOBODY" and "BEM-098" in told["text"]

        # four eyes: the requester may not answer; told so alone, nothing recorded
        assert send(dev, click(action_id, "UU1"))[0] == 200
        told = slack.wait_for("chat.postEphemeral", 2)[-1]
        assert told["user"] == "UU1" and "BEM-090" in told["text"]
        assert action(dev, action_id)["status"] == "pending" and action(dev, action_id)["votes"] == []

        # two approvers click at once: one decision
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            answers = list(pool.map(lambda user: send(dev, click(action_id, user)), ["UANA", "UBO"]))
        assert [status for status, _ in answers] == [200, 200]
        decided = action(dev, action_id)
        assert decided["status"] == "resolved" and decided["response"]["who"] in ("ana", "bo")
        loser = "UBO" if decided["response"]["who"] == "ana" else "UANA"
        told = slack.wait_for("chat.postEphemeral", 3)[-1]
        assert told["user"] == loser and "BEM-066" in told["text"]
        last = wait_until(lambda: [u for u in slack.named("chat.update") if "Approved by" in json.dumps(u)])[
            -1
        ]
        assert not any(b["block_id"].startswith("riverbeam_decide") for b in blocks_of(last).values())
        assert f"Approved by {decided['response']['who']}" in json.dumps(last)
        assert len(slack.named("chat.postMessage")) == 1  # posted once, whatever the events

        # Reject opens a modal for the reason; its submission rejects, with the reason
        second = ask(dev, "Push docs/reject")
        slack.wait_for("chat.postMessage", 2)
        assert send(dev, click(second, "UBO", "riverbeam_reject"))[0] == 200
        (opened,) = slack.wait_for("views.open")
        assert opened["trigger_id"] == "trigger-UBO" and second in opened["view"]["private_metadata"]
        assert action(dev, second)["status"] == "pending"  # the click alone decides nothing
        assert send(dev, reason_submitted(second, "UBO", "not on a <!here> Friday"))[0] == 200
        rejected = action(dev, second)
        assert (
            rejected["status"] == "cancelled" and rejected["response"]["reason"] == "not on a <!here> Friday"
        )
        wait_until(lambda: [u for u in slack.named("chat.update") if "Rejected by bo" in json.dumps(u)])


def test_quorum_votes_shown_and_the_second_decides(tmp_path: Path) -> None:
    with stack(tmp_path, required=2) as (dev, slack):
        action_id = ask(dev, "Push docs/quorum")
        slack.wait_for("chat.postMessage")
        assert send(dev, click(action_id, "UANA"))[0] == 200
        voted = slack.wait_for("chat.update")[-1]
        assert "1 of 2 approvals: ana" in json.dumps(voted)
        assert f"riverbeam_decide_{action_id}" in blocks_of(voted)  # still open: buttons stay
        assert send(dev, click(action_id, "UANA"))[0] == 200  # the same person again: one vote
        assert [v["user_id"] for v in action(dev, action_id)["votes"]] == ["ana"]
        assert send(dev, click(action_id, "UBO"))[0] == 200
        found = action(dev, action_id)
        assert found["status"] == "resolved" and [v["user_id"] for v in found["response"]["votes"]] == [
            "ana",
            "bo",
        ]
        last = wait_until(
            lambda: [u for u in slack.named("chat.update") if "Approved by bo" in json.dumps(u)]
        )[-1]
        assert f"riverbeam_decide_{action_id}" not in blocks_of(last)


def test_slack_down_then_up_posts_late_and_the_expiry_takes_the_buttons(tmp_path: Path) -> None:
    with stack(tmp_path, expires=4, sweep=0.5) as (dev, slack):
        slack.down = True
        started = time.monotonic()
        action_id = ask(dev, "Push docs/later")
        assert time.monotonic() - started < 10  # no run waits for Slack
        wait_until(lambda: slack.refused >= 2)
        assert slack.named("chat.postMessage") == []
        slack.down = False
        (posted,) = slack.wait_for("chat.postMessage")
        assert action_id in json.dumps(posted)
        wait_until(lambda: action(dev, action_id)["status"] == "expired")
        last = wait_until(lambda: [u for u in slack.named("chat.update") if "Expired" in json.dumps(u)])[-1]
        assert f"riverbeam_decide_{action_id}" not in blocks_of(last)
        assert len(slack.named("chat.postMessage")) == 1


SLOW_AGENTS = """
people:
  u1: {slack: UU1}
code: code
agents:
  slow:
    tools: [slow_tools:slow_deploy]
    notify: {slack: {channel: C0DEPLOYS}}
"""
SLOW_TOOLS = """
import time

from riverbeam import tool


@tool(confirm_required=True)
def slow_deploy(target: str) -> str:
    \"\"\"Deploy the target, which takes a while.\"\"\"
    time.sleep(6)
    return f"deployed {target}"
"""


def test_the_click_is_answered_within_3_s_while_the_tool_takes_longer(tmp_path: Path) -> None:
    (tmp_path / "code").mkdir()
    (tmp_path / "code" / "slow_tools.py").write_text(SLOW_TOOLS, encoding="utf-8")
    with stack(tmp_path, agents_yaml=SLOW_AGENTS) as (dev, slack):
        body = {
            "agent_name": "slow",
            "session_id": str(uuid.uuid4()),
            "content": [{"type": "text", "text": 'call slow_deploy {"target": "prod"}'}],
            "auth_context": {"user_id": "u1"},
        }
        status, result = http(dev, "POST", "/invoke", body)
        assert status == 200 and result["interrupted"], result
        action_id = result["action_required"][0]["action_id"]
        (posted,) = slack.wait_for("chat.postMessage")
        assert posted["channel"] == "C0DEPLOYS"
        clicked = time.monotonic()
        assert send(dev, click(action_id, "UU1"))[0] == 200  # send() asserts the answer took under 3 s
        done = wait_until(lambda: (a := action(dev, action_id)).get("outcome") and a)
        assert done["outcome"]["status"] == "ok" and time.monotonic() - clicked >= 6  # the tool ran after

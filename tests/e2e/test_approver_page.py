"""The inbox page's approver view in Debian's headless chromium (selenium) against a real `riverbeam dev`:
two people of ops, each in a browser of their own, approve a push to main that its requester may not
approve; the first vote is shown and pushes nothing, the second pushes main, once, to the bare remote."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from riverbeam_local.clients.dev_process import DevProcess

from tests.support import browser
from tests.support.devstack import TWO_OF_OPS, http, remote_refs, running_with_agents, secret_of, work_commit
from tests.support.inbox_page import WAIT_SECONDS, approver_cards, by_testid, need_browser, until

if TYPE_CHECKING:
    pass

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]


@pytest.fixture
def dev(tmp_path: Path) -> Iterator[DevProcess]:
    need_browser()
    with running_with_agents(tmp_path, TWO_OF_OPS) as process:
        yield process


def test_two_of_ops_approve_a_push_to_main_in_two_browsers(dev: DevProcess) -> None:
    session_id = str(uuid.uuid4())
    body = {
        "agent_name": "author",
        "session_id": session_id,
        "content": [{"type": "text", "text": "Push main"}],
        "auth_context": {"user_id": "u1"},
    }
    status, result = http(dev, "POST", "/invoke", body)
    assert status == 200 and result["interrupted"], result
    action_id = result["action_required"][0]["action_id"]

    with browser.chromium() as ana, browser.chromium() as bo:
        for driver, user in ((ana, "ana"), (bo, "bo")):
            driver.get(f"{dev.http_url}/?user={user}&groups=ops#secret={secret_of(dev)}")
        first = until(ana, lambda: approver_cards(ana), "ana's approver card")[0]
        assert first.get_attribute("data-action-id") == action_id
        assert "of u1" in by_testid(first, "approval-owner").text
        assert by_testid(first, "approval-votes").text == "0 of 2 approvals"
        by_testid(first, "approve").click()
        until(ana, lambda: not approver_cards(ana), "ana's card gone once she voted")
        assert "refs/heads/main" not in remote_refs(dev.data_dir)

        second = until(
            bo,
            lambda: [c for c in approver_cards(bo) if "1 of 2" in by_testid(c, "approval-votes").text],
            "bo's card with ana's vote",
        )[0]
        assert by_testid(second, "approval-votes").text == "1 of 2 approvals: ana"
        by_testid(second, "approve").click()
        until(bo, lambda: not approver_cards(bo), "bo's card gone once the push was approved")

    deadline = time.monotonic() + WAIT_SECONDS  # the push runs in the stack's worker, after the answer
    while remote_refs(dev.data_dir).get("refs/heads/main") != work_commit(dev.data_dir, "main"):
        assert time.monotonic() < deadline, "main was not pushed"
        time.sleep(0.5)
    status, action = http(dev, "GET", f"/actions/{action_id}?user_id=u1")
    assert status == 200 and action["status"] == "resolved" and action["outcome"]["status"] == "ok"
    assert [v["user_id"] for v in action["response"]["votes"]] == ["ana", "bo"]

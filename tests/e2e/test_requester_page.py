"""The inbox page in headless Chromium against a real `riverbeam dev`, for a requester who is in the group
that approves their tool under four eyes: the page never offers them their own action to approve (not in
the approver view through their group, no Approve on their session's card), only to withdraw it."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from riverbeam_local.clients.dev_process import DevProcess

from tests.support import browser
from tests.support.devstack import TWO_OF_OPS, http, running_with_agents, secret_of
from tests.support.inbox_page import approver_cards, ask_to_push, by_testid, need_browser, until

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]


@pytest.fixture
def dev(tmp_path: Path) -> Iterator[DevProcess]:
    need_browser()
    with running_with_agents(tmp_path, TWO_OF_OPS) as process:
        yield process


def approver_ids(driver: WebDriver) -> list[str]:
    return [str(card.get_attribute("data-action-id")) for card in approver_cards(driver)]


def test_a_four_eyes_requester_in_the_approving_group_is_offered_only_to_withdraw(dev: DevProcess) -> None:
    body = {  # another's action, which rob (of ops) may approve
        "agent_name": "author",
        "session_id": str(uuid.uuid4()),
        "content": [{"type": "text", "text": "Push main"}],
        "auth_context": {"user_id": "u1"},
    }
    status, others = http(dev, "POST", "/invoke", body)
    assert status == 200 and others["interrupted"], others
    others_id = others["action_required"][0]["action_id"]

    with browser.chromium() as page:
        page.get(f"{dev.http_url}/?user=rob&groups=ops#secret={secret_of(dev)}")
        own = ask_to_push(page)
        own_id = own.get_attribute("data-action-id")
        assert not by_testid(own, "approve").is_displayed()
        assert not by_testid(own, "edit").is_displayed()
        assert by_testid(own, "reject").is_displayed()
        assert "Needs another person's approval" in by_testid(own, "approval-blocked").text

        page.refresh()  # the approver view read again, after rob's own action was asked
        listed = until(page, lambda: others_id in approver_ids(page) and approver_ids(page), "u1's card")
        assert own_id not in listed

"""The inbox page's rough edges (issue 39) in Debian's headless chromium against a real `riverbeam dev`: the
page at a phone's, a tablet's and a laptop's width, each action shown once, the first words without the
secret, a console left clean, a word after each decision, and four eyes as each person sees them."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from riverbeam_local.clients.dev_process import DevProcess, running

from tests.support import browser
from tests.support.devstack import TWO_OF_OPS, http, remote_refs, running_with_agents, secret_of, work_commit
from tests.support.inbox_page import WAIT_SECONDS, approvals, ask_to_push, by_testid, need_browser, until

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver
    from selenium.webdriver.remote.webelement import WebElement

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

# the page's reads of GET /approvals counted as they are answered
APPROVER_TAP = """
window.approverReads = 0;
const realFetch = window.fetch;
window.fetch = async (url, init) => {
  const answer = await realFetch(url, init);
  if (String(url).includes("/approvals?")) window.approverReads += 1;
  return answer;
};
"""

# every shown button scrolled into view: where it is, and whether a click at its centre reaches it
BUTTONS_SCRIPT = """
const out = [];
for (const button of document.querySelectorAll("button")) {
  if (!button.offsetParent) continue;  // not shown (hidden, or in a hidden part)
  button.scrollIntoView({block: "center", inline: "center"});
  const box = button.getBoundingClientRect();
  const hit = document.elementFromPoint(box.left + box.width / 2, box.top + box.height / 2);
  out.push({name: button.dataset.testid || button.id || button.textContent, left: box.left,
            right: box.right, top: box.top, bottom: box.bottom,
            reached: Boolean(hit && button.contains(hit))});
}
return out;
"""


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevProcess]:
    with running(tmp_path_factory.mktemp("inbox-edges")) as process:
        yield process


@pytest.fixture
def dev(stack: DevProcess) -> DevProcess:
    need_browser()
    return stack


def open_page(driver: WebDriver, dev: DevProcess, query: str) -> None:
    driver.get(f"{dev.http_url}/?{query}#secret={secret_of(dev)}")


def at_width(driver: WebDriver, width: int, height: int = 800) -> None:
    """The viewport itself at `width` x `height` (a window's size includes chromium's frame)."""
    metrics = {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600}
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)


def console_errors(driver: WebDriver) -> list[dict[str, Any]]:
    return [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]


def notices(driver: WebDriver) -> str:
    return str(by_testid(driver, "notices").text)


def shown_cards(driver: WebDriver, action_id: str) -> list[WebElement]:
    from selenium.webdriver.common.by import By

    found = driver.find_elements(By.CSS_SELECTOR, f"[data-testid=approval][data-action-id='{action_id}']")
    return [card for card in found if card.is_displayed()]


def approver_reads(driver: WebDriver) -> int:
    return int(driver.execute_script("return window.approverReads"))


# ---------------------------------------------------------------------------- widths


@pytest.mark.parametrize("width", [360, 768, 1300])
def test_nothing_is_cut_off_and_every_button_is_reachable(dev: DevProcess, width: int) -> None:
    with browser.chromium() as driver:
        at_width(driver, width)
        open_page(driver, dev, f"user=fit-{width}")
        card = ask_to_push(driver)
        by_testid(card, "edit").click()  # the editor open: its button shown too
        assert by_testid(card, "approve-edited").is_displayed()
        scroll_width, inner = driver.execute_script(
            "return [document.documentElement.scrollWidth, window.innerWidth]"
        )
        assert scroll_width <= inner, (scroll_width, inner)
        buttons = driver.execute_script(BUTTONS_SCRIPT)
        names = {button["name"] for button in buttons}
        assert {"approve", "edit", "reject", "always-allow", "approve-edited", "send", "new-session"} <= names
        height = driver.execute_script("return window.innerHeight")
        for button in buttons:
            inside = button["left"] >= 0 and button["top"] >= 0 and button["right"] <= inner
            assert inside and button["bottom"] <= height and button["reached"], (width, button)
        by_testid(card, "reject").click()
        by_testid(card, "confirm-reject").click()
        until(driver, lambda: not approvals(driver), "the card to go")


# ---------------------------------------------------------------------------- once, and a clean console


def test_the_owners_action_is_shown_once(dev: DevProcess) -> None:
    with browser.chromium() as driver:
        driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": APPROVER_TAP})
        open_page(driver, dev, "user=once-user")
        card = ask_to_push(driver)
        action_id = card.get_attribute("data-action-id") or ""
        # two reads of the approver's inbox answered after the card came: the action was in both
        reads = approver_reads(driver)
        until(driver, lambda: approver_reads(driver) >= reads + 2, "the approver's inbox read twice")
        assert len(shown_cards(driver, action_id)) == 1
        by_testid(card, "reject").click()
        by_testid(card, "confirm-reject").click()
        until(driver, lambda: not shown_cards(driver, action_id), "the card to go")


def test_a_new_session_leaves_the_console_clean(dev: DevProcess) -> None:
    with browser.chromium() as driver:
        open_page(driver, dev, "user=clean-user")
        card = ask_to_push(driver)
        by_testid(card, "approve").click()
        until(
            driver,
            lambda: driver.find_elements("css selector", "#conversation .entry.result.ok"),
            "the result",
        )
        by_testid(driver, "new-session").click()  # a second new session, never messaged
        until(driver, lambda: by_testid(driver, "connection").text == "connected", "the new session")
        time.sleep(1.0)  # its reads (if any) answered: they would be logged as they fail
        assert console_errors(driver) == []
        assert by_testid(driver, "errors").text == ""


def test_without_the_secret_the_page_says_which_address_to_open(dev: DevProcess) -> None:
    with browser.chromium() as driver:
        driver.get(f"{dev.http_url}/?user=no-secret")
        said = until(driver, lambda: by_testid(driver, "errors").text, "the first words")
        assert said == (
            "BEM-033: this page needs the stack's secret: open the Inbox page address that riverbeam dev "
            f"printed ({dev.http_url}/#secret=...), with its #secret part."
        ), said
        assert "Authorization" not in said  # the words of a client's header, not of a person's step


# ---------------------------------------------------------------------------- decisions confirmed


def test_each_decision_is_confirmed_on_the_page(dev: DevProcess) -> None:
    with browser.chromium() as driver:
        open_page(driver, dev, "user=sure-user")
        card = ask_to_push(driver)
        by_testid(card, "approve").click()
        until(driver, lambda: "Approved git_push" in notices(driver), "the approval confirmed")
        assert notices(driver) == "Approved git_push as sure-user: it runs now."
        card = ask_to_push(driver, "docs/later")
        by_testid(card, "reject").click()
        by_testid(card, "reason").send_keys("not today")
        by_testid(card, "confirm-reject").click()
        until(driver, lambda: "Rejected" in notices(driver), "the rejection confirmed")
        assert notices(driver) == "Rejected git_push as sure-user: not today."


# ---------------------------------------------------------------------------- four eyes


@pytest.fixture
def four_eyes(tmp_path: Path) -> Iterator[DevProcess]:
    need_browser()
    with running_with_agents(tmp_path, TWO_OF_OPS) as process:
        yield process


def _approver_card(driver: WebDriver, action_id: str) -> WebElement | None:
    from selenium.webdriver.common.by import By

    found = driver.find_elements(By.CSS_SELECTOR, f"#approver-approvals [data-action-id='{action_id}']")
    return found[0] if found else None


def test_four_eyes_as_the_owner_and_each_approver_see_it(four_eyes: DevProcess) -> None:
    dev = four_eyes
    with browser.chromium() as owner, browser.chromium() as ana, browser.chromium() as bo:
        open_page(owner, dev, "user=u1")
        card = ask_to_push(owner, "main")
        action_id = card.get_attribute("data-action-id") or ""
        # the owner is told who must decide, and offered no approval the stack would refuse (BEM-090)
        assert by_testid(card, "approval-blocked").text == (
            "Needs another person's approval: 2 of ops (you may still reject it)."
        )
        for name in ("approve", "edit", "always-allow"):
            assert not by_testid(card, name).is_displayed(), name
        assert by_testid(card, "reject").is_displayed()

        for driver, user in ((ana, "ana"), (bo, "bo")):
            open_page(driver, dev, f"user={user}&groups=ops")
        first = until(ana, lambda: _approver_card(ana, action_id), "ana's card")
        # the conversation that led to the ask, read with ana's own identity
        talk = until(ana, lambda: by_testid(first, "approval-conversation").text, "the conversation")
        assert "Push main" in talk and "I will push main." in talk, talk
        by_testid(first, "approve").click()
        until(ana, lambda: "Vote recorded" in notices(ana), "ana's vote confirmed")
        assert notices(ana) == "Vote recorded for git_push: 1 of 2 approvals (ana); it runs once 2 approve."
        assert "refs/heads/main" not in remote_refs(dev.data_dir)

        second = until(
            bo,
            lambda: (
                (c := _approver_card(bo, action_id)) and "1 of 2" in by_testid(c, "approval-votes").text and c
            ),
            "bo's card with ana's vote",
        )
        by_testid(second, "approve").click()
        until(bo, lambda: "Approved" in notices(bo), "bo's approval confirmed")
        assert notices(bo) == "Approved git_push as bo: it runs now."
        assert console_errors(owner) == console_errors(ana) == console_errors(bo) == []

    deadline = time.monotonic() + WAIT_SECONDS  # the push runs in the stack's worker, after the answer
    while remote_refs(dev.data_dir).get("refs/heads/main") != work_commit(dev.data_dir, "main"):
        assert time.monotonic() < deadline, "main was not pushed"
        time.sleep(0.5)
    status, action = http(dev, "GET", f"/actions/{action_id}?user_id=u1")
    assert status == 200 and [v["user_id"] for v in action["response"]["votes"]] == ["ana", "bo"]

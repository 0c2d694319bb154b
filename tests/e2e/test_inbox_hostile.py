"""The inbox page in headless chromium against `riverbeam dev` whose agent is hostile (a scripted Bedrock
model, tests.support.hostile_agent): a card for the ref `docs/\\u202eetadpu\\u202c` shows the escape, not
"docs/update", under a warning; the agent's terminal sequences are shown as text; what is approved or
edited is the value that was shown."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest
from riverbeam_local.clients.dev_process import DevProcess

from tests.support import browser
from tests.support.devstack import assert_none_left, http, secret_of
from tests.support.hostile_agent import HOSTILE_SHOWN, TROJAN_REF, TROJAN_SHOWN, hostile_stack
from tests.support.inbox_page import approvals, by_testid, conversation, need_browser, until

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver
    from selenium.webdriver.remote.webelement import WebElement

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]
USER = "inbox-user"
HIDDEN = "\x1b\x07\x9b\u200b\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevProcess]:
    need_browser()
    data_dir = tmp_path_factory.mktemp("inbox-hostile") / "data"
    with hostile_stack(data_dir) as process:
        yield process
    assert_none_left(data_dir)


@pytest.fixture
def page(dev: DevProcess) -> Iterator[WebDriver]:
    with browser.chromium() as driver:
        driver.get(f"{dev.http_url}/?user={USER}#secret={secret_of(dev)}")
        yield driver


def say(page: WebDriver, text: str) -> None:
    """A new session, and `text` sent in it."""
    by_testid(page, "new-session").click()
    by_testid(page, "message").send_keys(text)
    by_testid(page, "send").click()


def page_text(page: WebDriver) -> str:
    """Every character the page holds as text (selenium's .text is what is drawn, and may drop some)."""
    return str(page.execute_script("return document.body.textContent"))


def the_card(page: WebDriver) -> WebElement:
    cards: list[WebElement] = until(page, lambda: approvals(page), "the approval card")
    assert len(cards) == 1, cards
    return cards[0]


def test_a_card_for_a_bidi_ref_shows_the_escape_and_a_warning(dev: DevProcess, page: WebDriver) -> None:
    say(page, "Push the tricky branch")
    card = the_card(page)
    args = by_testid(card, "approval-args").text
    assert f'"ref": "{TROJAN_SHOWN}"' in args, args
    assert json.loads(args) == {"ref": TROJAN_REF}  # the JSON shown is the value that runs
    warning = by_testid(card, "approval-warning")
    assert warning.is_displayed()
    assert "invisible or bidi characters" in warning.text and "U+202E, U+202C" in warning.text
    until(
        page, lambda: f'git_push {{"ref":"{TROJAN_SHOWN}"}}' in conversation(page), "the call shown escaped"
    )
    assert not any(c in page_text(page) for c in HIDDEN), page_text(page)

    by_testid(card, "edit").click()  # the editor starts from the same escaped JSON: the same value
    edited = by_testid(card, "edited-args").get_attribute("value") or ""
    assert TROJAN_SHOWN in edited and json.loads(edited) == {"ref": TROJAN_REF}

    action_id = card.get_attribute("data-action-id") or ""
    by_testid(card, "reject").click()
    by_testid(card, "reason").send_keys("that is not docs/update")
    by_testid(card, "confirm-reject").click()
    until(page, lambda: not approvals(page), "the card to go")
    status, action = http(dev, "GET", f"/actions/{action_id}?user_id={USER}")
    assert status == 200 and (action["args"], action["status"]) == ({"ref": TROJAN_REF}, "cancelled"), action


def test_a_card_whose_args_hide_nothing_has_no_warning(page: WebDriver) -> None:
    say(page, "Push docs/update")
    card = the_card(page)
    assert json.loads(by_testid(card, "approval-args").text) == {"ref": "docs/update"}
    assert card.find_elements("css selector", "[data-testid=approval-warning]") == []


def test_the_agents_terminal_sequences_are_shown_as_text(page: WebDriver) -> None:
    say(page, "Say something hostile")
    until(page, lambda: HOSTILE_SHOWN in page_text(page), "the agent's text, escaped")
    assert not any(c in page_text(page) for c in HIDDEN), page_text(page)

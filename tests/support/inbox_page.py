"""The inbox page as its tests see it: waits bounded in time, elements by their data-testid, and the steps
a person takes (selenium imported on first use, so a machine without it can still collect the tests)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

from tests.support import browser

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver
    from selenium.webdriver.remote.webelement import WebElement

# far above what a step takes here (a second or two), for a loaded 2-core CI machine
WAIT_SECONDS = 90.0


def need_browser() -> None:
    """Skip where no browser can run, but fail under CI=true."""
    reason = browser.missing()
    if reason is not None:
        if browser.must_run():
            pytest.fail(f"CI=true and no browser to test the inbox page: {reason}")
        pytest.skip(reason)


def until(driver: WebDriver, check: Callable[[], Any], what: str) -> Any:
    """`check()`'s first truthy answer, waited for (bounded); selenium's lookups retried meanwhile."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(driver, WAIT_SECONDS, ignored_exceptions=[StaleElementReferenceException])
    return wait.until(lambda _: check(), message=f"waited {WAIT_SECONDS} s for {what}")


def by_testid(root: WebDriver | WebElement, name: str) -> WebElement:
    from selenium.webdriver.common.by import By

    return root.find_element(By.CSS_SELECTOR, f"[data-testid={name}]")


def approvals(driver: WebDriver) -> list[WebElement]:
    from selenium.webdriver.common.by import By

    return driver.find_elements(By.CSS_SELECTOR, "#approvals [data-testid=approval]")


def approver_cards(driver: WebDriver) -> list[WebElement]:
    """The cards of the approver view (other sessions' approvals the viewer may answer)."""
    from selenium.webdriver.common.by import By

    return driver.find_elements(By.CSS_SELECTOR, "#approver-approvals [data-testid=approval]")


def conversation(driver: WebDriver) -> str:
    return str(by_testid(driver, "conversation").text)


def ask_to_push(driver: WebDriver, ref: str = "docs/update") -> WebElement:
    """A new session, the message sent, and the approval card it brings."""
    by_testid(driver, "new-session").click()
    by_testid(driver, "message").send_keys(f"Push {ref}")
    by_testid(driver, "send").click()
    cards: list[WebElement] = until(driver, lambda: approvals(driver), "the approval card")
    assert len(cards) == 1, cards
    return cards[0]


def results(driver: WebDriver, status: str) -> list[WebElement]:
    """The conversation's tool results of this status."""
    from selenium.webdriver.common.by import By

    return driver.find_elements(By.CSS_SELECTOR, f"#conversation .entry.result.{status}")


def session_id(driver: WebDriver) -> str:
    found = re.search(r"[?&]session=([0-9a-f-]{36})", driver.current_url)
    assert found, driver.current_url
    return found.group(1)


def edit(card: WebElement, text: str) -> None:
    if not by_testid(card, "editor").is_displayed():
        by_testid(card, "edit").click()
    box = by_testid(card, "edited-args")
    box.clear()
    box.send_keys(text)

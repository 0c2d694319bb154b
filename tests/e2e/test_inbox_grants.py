"""The inbox page's standing grants in headless Chromium against a real `riverbeam dev`: "Always allow in
this session" on a card approves and grants the tool, the session's grants are listed, the next push runs
with no card, and Revoke makes the tool ask again."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from riverbeam_local.clients.dev_process import DevProcess, running

from tests.support import browser
from tests.support.devstack import http, remote_refs, secret_of, work_commit
from tests.support.inbox_page import approvals, ask_to_push, by_testid, need_browser, session_id, until

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver
    from selenium.webdriver.remote.webelement import WebElement

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

USER = "grant-user"


@pytest.fixture
def dev(tmp_path: Path) -> Iterator[DevProcess]:
    need_browser()
    with running(tmp_path / "data") as process:
        yield process


@pytest.fixture
def page(dev: DevProcess) -> Iterator[WebDriver]:
    with browser.chromium() as driver:
        driver.get(f"{dev.http_url}/?user={USER}#secret={secret_of(dev)}")
        yield driver


def pushed(dev: DevProcess, branch: str) -> bool:
    return remote_refs(dev.data_dir).get(f"refs/heads/{branch}") == work_commit(dev.data_dir, branch)


def grants(driver: WebDriver) -> list[WebElement]:
    from selenium.webdriver.common.by import By

    return driver.find_elements(By.CSS_SELECTOR, "#grants [data-testid=grant]")


def say(driver: WebDriver, text: str) -> None:
    by_testid(driver, "message").send_keys(text)
    by_testid(driver, "send").click()


def revoke_first(driver: WebDriver) -> bool:
    by_testid(grants(driver)[0], "revoke-grant").click()
    return True


def test_always_allow_then_revoke(dev: DevProcess, page: WebDriver) -> None:
    card = ask_to_push(page)
    always = by_testid(card, "always-allow")
    assert always.is_displayed() and always.text == "Always allow in this session"
    assert grants(page) == [] and by_testid(page, "grants").text == ""
    always.click()
    until(page, lambda: pushed(dev, "docs/update"), "docs/update pushed")
    listed_here = lambda: [(g.text, g.get_attribute("data-grant-id")) for g in grants(page)]  # noqa: E731
    [shown] = until(page, listed_here, "the session's grant listed")
    assert "git_push" in shown[0] and "any args" in shown[0] and USER in shown[0]
    session = session_id(page)
    status, listed = http(dev, "GET", f"/sessions/{session}/grants?user_id={USER}")
    assert status == 200 and [g["grant_id"] for g in listed["grants"]] == [shown[1]]

    say(page, "Push main")  # granted: pushed with no card
    until(page, lambda: pushed(dev, "main"), "main pushed unasked")
    assert approvals(page) == []

    until(page, lambda: revoke_first(page), "Revoke pressed")
    until(page, lambda: not grants(page), "the grant gone from the page")
    assert http(dev, "GET", f"/sessions/{session}/grants?user_id={USER}")[1]["grants"] == []
    say(page, "Push main")  # revoked: it asks again
    [asked] = until(page, lambda: approvals(page), "a card for the push after the revoke")
    assert "main" in by_testid(asked, "approval-args").text

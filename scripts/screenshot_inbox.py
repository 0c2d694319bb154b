"""Make docs/inbox.png, the README's picture of the approval inbox: a `riverbeam dev` of its own (a fresh
data dir), a short conversation, and a push waiting for approval with an edit under way (its diff shown),
taken by Debian's headless chromium at 1200x800.

    .venv/bin/python scripts/screenshot_inbox.py [OUTPUT.png]
"""

from __future__ import annotations

import sys
import tempfile
import urllib.parse
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the browser helper the page's tests use: one set of chromium flags

from riverbeam_local.clients.dev_process import running  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.remote.webdriver import WebDriver  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

from tests.support import browser  # noqa: E402

WIDTH, HEIGHT = 1200, 800
WAIT_SECONDS = 90


def say(driver: WebDriver, text: str, until_shown: str) -> None:
    box = driver.find_element(By.ID, "message")
    box.send_keys(text)
    driver.find_element(By.ID, "send").click()
    WebDriverWait(driver, WAIT_SECONDS).until(
        lambda d: until_shown in d.find_element(By.ID, "conversation").text, f"{until_shown!r} shown"
    )


def stage(driver: WebDriver, page_url: str) -> None:
    """The page as the picture shows it (`page_url`: the one the stack printed, with its secret)."""
    driver.get(urllib.parse.urlsplit(page_url)._replace(query="user=alice").geturl())
    driver.find_element(By.ID, "new-session").click()
    say(driver, "Hello", "I can push a branch for you")
    say(driver, "Push docs/update", "I will push docs/update.")
    card = WebDriverWait(driver, WAIT_SECONDS).until(
        lambda d: d.find_element(By.CSS_SELECTOR, "#approvals [data-testid=approval]"), "the approval"
    )
    card.find_element(By.CSS_SELECTOR, "[data-testid=edit]").click()
    edited = card.find_element(By.CSS_SELECTOR, "[data-testid=edited-args]")
    edited.clear()
    edited.send_keys('{\n  "ref": "main"\n}')
    WebDriverWait(driver, WAIT_SECONDS).until(
        lambda _: card.find_element(By.CSS_SELECTOR, "[data-testid=diff]").text, "the diff"
    )
    driver.execute_script("document.activeElement.blur()")  # no caret or focus ring in the picture


def main(argv: list[str]) -> int:
    output = Path(argv[0]) if argv else ROOT / "docs" / "inbox.png"
    reason = browser.missing()
    if reason is not None:
        print(f"cannot take the screenshot: {reason}", file=sys.stderr)
        return 1
    with (
        tempfile.TemporaryDirectory(prefix="riverbeam-screenshot-") as data_dir,
        running(Path(data_dir)) as dev,
        browser.chromium(WIDTH, HEIGHT) as driver,
    ):
        # the viewport itself at WIDTH x HEIGHT (a window's size includes what headless chrome keeps for
        # its frame)
        driver.execute_cdp_cmd(
            "Emulation.setDeviceMetricsOverride",
            {"width": WIDTH, "height": HEIGHT, "deviceScaleFactor": 1, "mobile": False},
        )
        stage(driver, dev.urls["Inbox page"])
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_bytes(driver.get_screenshot_as_png())
    print(f"wrote {output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

"""Debian's headless chromium driven by selenium, for the inbox page's tests and its screenshot script: the
flags this closed network needs, a fresh profile each time, and the reason when no browser is there; and a
site of another origin on 127.0.0.1 for the pages that must not reach the stack."""

from __future__ import annotations

import os
import queue
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
# without the background-networking flags chromium's own connections are refused here, many at a time
FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
)
# far above a page load or a click's answer (well under a second), for a loaded 2-core machine
PAGE_LOAD_SECONDS = 120


def missing() -> str | None:
    """Why no browser test can run here, or None."""
    absent = [str(path) for path in (CHROMIUM, CHROMEDRIVER) if not path.exists()]
    if absent:
        return f"{' and '.join(absent)} not installed (scripts/install_browser installs Debian's chromium)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[dev]')"
    return None


def must_run() -> bool:
    """In CI a missing browser is a failure, not a skip: a CI run may not silently test less."""
    return os.environ.get("CI", "").lower() == "true"


@contextmanager
def chromium(width: int = 1200, height: int = 800) -> Iterator[WebDriver]:
    """A selenium Chrome driver on Debian's chromium, quit and its profile removed at the end."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="riverbeam-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (*FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}"):
        options.add_argument(flag)
    driver = None
    try:
        # selenium-manager is never asked: the driver is the one Debian installed beside its chromium
        driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
        driver.set_page_load_timeout(PAGE_LOAD_SECONDS)
        driver.set_script_timeout(PAGE_LOAD_SECONDS)
        yield driver
    finally:
        if driver is not None:
            driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


@contextmanager
def static_site(root: Path) -> Iterator[str]:
    """`root` served by Python's http.server on a free port of 127.0.0.1, as a child process: yields its URL
    (an origin of its own) and stops the process by its pid at the end."""
    process = subprocess.Popen(
        [sys.executable, "-u", "-m", "http.server", "0", "--bind", "127.0.0.1", "--directory", str(root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    assert process.stdout is not None
    out = process.stdout
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: lines.put(out.readline()), daemon=True).start()
    try:
        try:
            said = lines.get(timeout=PAGE_LOAD_SECONDS)  # "Serving HTTP on 127.0.0.1 port N (...) ..."
        except queue.Empty:
            said = ""
        port = re.search(r" port (\d+) ", said)
        if port is None:
            raise RuntimeError(f"the static site did not start: {said!r}")
        yield f"http://127.0.0.1:{port.group(1)}"
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)

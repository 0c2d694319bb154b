"""The approval inbox page (issue 13) in Debian's headless chromium, driven by selenium, against a real
`riverbeam dev`: each decision is seen where it matters, in the bare remote (git) or its absence."""

from __future__ import annotations

import json
import re
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from riverbeam_local.clients.dev_process import DevProcess, running

from tests.support import browser
from tests.support.devstack import http, remote_refs, secret_of, work_commit
from tests.support.inbox_page import (
    WAIT_SECONDS,
    approvals,
    ask_to_push,
    by_testid,
    conversation,
    edit,
    need_browser,
    results,
    session_id,
    until,
)
from tests.support.inbox_scripts import JWT_DEPLOYMENT, MUTE_SOCKET, ORDERING_SCRIPT, SOCKET_TAP

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

USER = "inbox-user"
# the approval time of the expiry test's agent: long enough to see the card and its countdown first
EXPIRES_AFTER = 10


# ---------------------------------------------------------------------------- fixtures and helpers


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevProcess]:
    with running(tmp_path_factory.mktemp("inbox")) as process:
        yield process


@pytest.fixture
def dev(stack: DevProcess) -> DevProcess:
    """The stack, for a test that drives the page in the browser."""
    need_browser()
    return stack


@pytest.fixture
def remote(dev: DevProcess) -> Path:
    """The stack's bare remote, emptied: each test sees only its own pushes."""
    bare = dev.data_dir / "remote.git"
    for ref in remote_refs(dev.data_dir):
        subprocess.run(["git", "-C", str(bare), "update-ref", "-d", ref], check=True, timeout=60)
    assert remote_refs(dev.data_dir) == {}
    return bare


@pytest.fixture
def page(dev: DevProcess) -> Iterator[WebDriver]:
    with browser.chromium() as driver:
        driver.get(page_url(dev, f"user={USER}"))
        yield driver


def run_status(dev: DevProcess, run_id: str) -> str | None:
    status, run = http(dev, "GET", f"/runs/{run_id}?user_id={USER}")
    return str(run["status"]) if status == 200 else None


def stored_action(dev: DevProcess, action_id: str) -> dict[str, Any]:
    status, action = http(dev, "GET", f"/actions/{action_id}?user_id={USER}")
    assert status == 200, action
    return action  # type: ignore[no-any-return]


def decided(dev: DevProcess, action_id: str) -> dict[str, Any] | None:
    """The stored action once it is no longer pending."""
    action = stored_action(dev, action_id)
    return None if action["status"] == "pending" else action


def page_url(dev: DevProcess, query: str) -> str:
    """The page at `?query`, with the stack's secret in the fragment as the stack prints it."""
    return f"{dev.http_url}/?{query}#secret={secret_of(dev)}"


def pushed(dev: DevProcess, branch: str) -> bool:
    return remote_refs(dev.data_dir).get(f"refs/heads/{branch}") == work_commit(dev.data_dir, branch)


# ---------------------------------------------------------------------------- the page's routes


def fetch(dev: DevProcess, method: str, path: str, secret: bool = False) -> tuple[int, str, bytes]:
    """A request with no secret (the page's files need none), or with it (`secret`: the API's routes)."""
    headers = {"authorization": f"Bearer {secret_of(dev)}"} if secret else {}
    request = urllib.request.Request(dev.http_url + path, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=WAIT_SECONDS) as answer:
            return answer.status, answer.headers.get("content-type", ""), answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers.get("content-type", ""), error.read()


def test_the_page_and_its_assets_are_served_beside_the_api(stack: DevProcess) -> None:
    status, kind, body = fetch(stack, "GET", "/")
    assert (status, kind.split(";")[0]) == (200, "text/html") and b"approval inbox" in body
    for asset, media in [("app.js", "javascript"), ("api.js", "javascript"), ("style.css", "text/css")]:
        status, kind, _ = fetch(stack, "GET", f"/inbox/{asset}")
        assert status == 200 and media in kind, (asset, kind)
    assert fetch(stack, "GET", "/inbox/config.js")[2].strip().endswith(b"window.RIVERBEAM_CONFIG || {};")
    # what the page does not serve is still the API's, answered as API Gateway does
    assert fetch(stack, "GET", "/inbox/no-such.js")[0] == 404
    assert fetch(stack, "POST", "/", secret=True)[:2] == (404, "application/json")
    status, _, body = fetch(stack, "GET", f"/sessions/{uuid.uuid4()}?user_id={USER}", secret=True)
    assert status == 404 and json.loads(body)["error"]["code"] == "BEM-020", body
    assert fetch(stack, "GET", "/openapi.json")[0] == 200
    assert "Traceback" not in stack.stderr_text()


# ---------------------------------------------------------------------------- the decisions


def test_approve_pushes_and_the_conversation_shows_the_result(
    dev: DevProcess, remote: Path, page: WebDriver
) -> None:
    card = ask_to_push(page)
    assert by_testid(card, "approval-tool").text == "git_push"
    assert json.loads(by_testid(card, "approval-args").text) == {"ref": "docs/update"}
    action = stored_action(dev, card.get_attribute("data-action-id") or "")
    assert by_testid(card, "approval-hash").text == action["args_sha256"]
    assert re.fullmatch(r"[0-9a-f]{64}", action["args_sha256"])
    first = until(page, lambda: by_testid(card, "approval-countdown").text, "the time left")
    assert re.fullmatch(r"23h \d+m \d+s left", first), first
    until(page, lambda: by_testid(card, "approval-countdown").text != first, "the countdown to move")
    assert "Push docs/update" in conversation(page)
    assert "I will push docs/update." in conversation(page)

    by_testid(card, "approve").click()
    until(page, lambda: pushed(dev, "docs/update"), "docs/update in the bare remote")
    (result,) = until(page, lambda: results(page, "ok"), "the result in the conversation")
    assert "GIT_PUSH" in result.text.upper()
    until(page, lambda: not approvals(page), "the card to go")
    assert set(remote_refs(dev.data_dir)) == {"refs/heads/docs/update"}
    assert stored_action(dev, action["action_id"])["status"] == "resolved"
    assert by_testid(page, "approval-count").text == "0"


def test_edit_and_approve_pushes_the_edited_ref(dev: DevProcess, remote: Path, page: WebDriver) -> None:
    card = ask_to_push(page)
    action_id = card.get_attribute("data-action-id") or ""
    edit(card, '{"ref": "main"}')
    diff = until(page, lambda: by_testid(card, "diff").text, "the diff")
    assert '-   "ref": "docs/update"' in diff and '+   "ref": "main"' in diff, diff
    by_testid(card, "approve-edited").click()

    until(page, lambda: pushed(dev, "main"), "main in the bare remote")
    until(page, lambda: "Approved with edited args" in conversation(page), "the decision")
    assert set(remote_refs(dev.data_dir)) == {"refs/heads/main"}  # never the ref first asked for
    # the tool's outcome is stored by the run's write after the push
    action = until(
        page, lambda: (a := stored_action(dev, action_id)).get("outcome") and a, "the outcome stored"
    )
    assert (action["args"], action["run_args"]) == ({"ref": "docs/update"}, {"ref": "main"})
    assert action["outcome"]["status"] == "ok"


def test_reject_with_a_reason_pushes_nothing(dev: DevProcess, remote: Path, page: WebDriver) -> None:
    card = ask_to_push(page)
    action_id = card.get_attribute("data-action-id") or ""
    by_testid(card, "reject").click()
    by_testid(card, "reason").send_keys("not before the release")
    by_testid(card, "confirm-reject").click()

    until(page, lambda: "Rejected: not before the release" in conversation(page), "the reason shown")
    # the page shows a decision as it sends it: the resume is stored a moment later
    action = until(page, lambda: decided(dev, action_id), "the rejection stored")
    assert action["status"] == "cancelled" and action["response"]["reason"] == "not before the release"
    # the run that tells the agent has ended, its answer shown: nothing was pushed, and nothing will be
    until(page, lambda: run_status(dev, action["resolved_run_id"]) == "completed", "the run to end")
    told = "I did not push docs/update. Your reason: not before the release"
    until(page, lambda: told in conversation(page), "the agent's answer to the refusal")
    assert remote_refs(dev.data_dir) == {}
    assert not approvals(page)
    page.refresh()  # the reason is on record, read back with the conversation
    until(page, lambda: "Rejected: not before the release" in conversation(page), "the reason after a reload")
    assert remote_refs(dev.data_dir) == {}


def test_a_push_the_remote_rejects_is_shown_once(dev: DevProcess, remote: Path, page: WebDriver) -> None:
    hook = remote / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'no pushes today' >&2\nexit 1\n")
    hook.chmod(0o755)
    try:
        card = ask_to_push(page)
        action_id = card.get_attribute("data-action-id") or ""
        by_testid(card, "approve").click()
        action = until(page, lambda: decided(dev, action_id), "the approval stored")
        until(page, lambda: run_status(dev, action["resolved_run_id"]) == "completed", "the run to end")
    finally:
        hook.unlink()
    told = "The push of docs/update failed"
    until(page, lambda: told in conversation(page), "the agent's answer to the failure")
    # the run's frames are all shown (its answer is the last but `done`): its failure once, as the result
    (result,) = results(page, "error")
    assert "BEM-330" in result.text and "no pushes today" in result.text, result.text
    assert conversation(page).count("BEM-330") == 1, conversation(page)
    assert remote_refs(dev.data_dir) == {}
    page.refresh()  # read back from the stored conversation: once there too
    until(page, lambda: told in conversation(page), "the conversation after a reload")
    assert conversation(page).count("BEM-330") == 1, conversation(page)


def test_a_pending_approval_survives_a_reload(dev: DevProcess, remote: Path, page: WebDriver) -> None:
    card = ask_to_push(page)
    action_id = card.get_attribute("data-action-id")
    session = session_id(page)
    page.refresh()

    (card,) = until(page, lambda: approvals(page), "the approval card after the reload")
    assert card.get_attribute("data-action-id") == action_id
    assert session_id(page) == session
    assert by_testid(page, "session-id").get_attribute("value") == session
    until(page, lambda: "I will push docs/update." in conversation(page), "the conversation")
    assert json.loads(by_testid(card, "approval-args").text) == {"ref": "docs/update"}
    by_testid(card, "approve").click()
    until(page, lambda: pushed(dev, "docs/update"), "docs/update in the bare remote")
    until(page, lambda: not approvals(page), "the card to go")


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ('{"ref": "main"', "Not valid JSON"),
        ('["main"]', "must be a JSON object"),
        ('{"ref": 5}', "BEM-001"),
        ('{"branch": "main"}', "BEM-001"),
    ],
)
def test_an_invalid_edit_is_shown_and_pushes_nothing(
    dev: DevProcess, remote: Path, page: WebDriver, text: str, shown: str
) -> None:
    card = ask_to_push(page)
    action_id = card.get_attribute("data-action-id") or ""
    edit(card, text)
    by_testid(card, "approve-edited").click()
    if shown.startswith("BEM"):  # the server's refusal, naming the field
        problem = until(page, lambda: by_testid(card, "approval-error").text, "the server's refusal")
        assert problem.startswith("BEM-001: ") and "edited_args" in problem, problem
    else:  # refused on the page: never sent
        assert shown in by_testid(card, "edit-invalid").text
    assert by_testid(card, "approve").is_enabled()  # the action can still be decided
    assert stored_action(dev, action_id)["status"] == "pending"
    assert remote_refs(dev.data_dir) == {}
    assert [c.get_attribute("data-action-id") for c in approvals(page)] == [action_id]


def test_an_expired_approval_is_shown_as_such_and_pushes_nothing(tmp_path: Path) -> None:
    from selenium.common.exceptions import StaleElementReferenceException

    need_browser()
    agents = tmp_path / "agents.yaml"
    agents.write_text(f"agents:\n  author:\n    tools: [git_push]\n    expires_after: {EXPIRES_AFTER}\n")
    with running(tmp_path / "data", args=("--agents", str(agents))) as dev, browser.chromium() as page:
        page.get(page_url(dev, f"user={USER}"))
        card = ask_to_push(page)
        action_id = card.get_attribute("data-action-id") or ""
        # seconds left (or none already, on a machine slow enough to take them all to show the card)
        assert re.fullmatch(r"\d+s left|expired", by_testid(card, "approval-countdown").text)
        expired = until(
            page,
            lambda: not approvals(page) or by_testid(card, "approval-countdown").text == "expired",
            "the approval to expire",
        )
        try:  # still shown (no sweep took it off first): marked expired, and an approval is refused
            if expired is True and approvals(page):
                assert "expired" in (card.get_attribute("class") or "")
                by_testid(card, "approve").click()
                problem = until(page, lambda: by_testid(card, "approval-error").text, "the refusal")
                assert re.match(r"BEM-\d+: .*expired", problem), problem
        except StaleElementReferenceException:
            pass  # the sweep's frame took the card off meanwhile: also right
        until(page, lambda: stored_action(dev, action_id)["status"] == "expired", "the action expired")
        assert remote_refs(dev.data_dir) == {}


def test_frames_are_shown_in_order_and_once(page: WebDriver) -> None:
    shown = page.execute_async_script(ORDERING_SCRIPT)
    assert shown == ["b0", "b1", "b2", "a0", "a1", "a2", "a3", "c7", "d0", "d1", "d0", "-"], shown


# ---------------------------------------------------------------------------- frames and config


def test_a_jwt_deployment_sends_the_token_not_a_user_id(dev: DevProcess) -> None:
    from selenium.webdriver.common.keys import Keys

    with browser.chromium() as driver:
        driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": JWT_DEPLOYMENT})
        driver.get(page_url(dev, f"session={uuid.uuid4()}"))
        assert not by_testid(driver, "user-id").is_displayed()
        until(driver, lambda: "enter a token" in by_testid(driver, "errors").text, "the token asked for")
        by_testid(driver, "token").send_keys("t0ken", Keys.TAB)

        seen = until(
            driver,
            lambda: driver.execute_script("return window.seen.fetches.length && window.seen"),
            "a read",
        )
        assert all(f["authorization"] == "Bearer t0ken" for f in seen["fetches"]), seen
        assert not any("user_id" in f["url"] for f in seen["fetches"]), seen
        socket = until(
            driver, lambda: driver.execute_script("return window.seen.sockets[0]"), "a subscription"
        )
        assert "token=t0ken" in socket and "user_id" not in socket, socket
        # this stack wants its secret where the page sends the token: its refusal is shown as it answered
        until(driver, lambda: "BEM-033: " in by_testid(driver, "errors").text, "the stack's refusal")


def test_frames_the_socket_never_brought_are_read_back(dev: DevProcess, remote: Path) -> None:
    with browser.chromium() as driver:
        driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": MUTE_SOCKET})
        driver.get(page_url(dev, f"user={USER}"))
        card = ask_to_push(driver)  # the run's frames, the approval's among them, from GET /runs/{id}/frames
        until(driver, lambda: by_testid(driver, "connection").text == "connected", "the (mute) socket")
        assert "I will push docs/update." in conversation(driver)
        assert conversation(driver).count("I will push docs/update") == 1  # each frame shown once
        by_testid(card, "approve").click()
        until(driver, lambda: pushed(dev, "docs/update"), "docs/update in the bare remote")
        until(driver, lambda: results(driver, "ok"), "the result in the conversation")


def test_unknown_and_expiry_frames_are_shown_and_reread_the_inbox(dev: DevProcess, remote: Path) -> None:
    with browser.chromium() as driver:
        driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": SOCKET_TAP})
        driver.get(page_url(dev, f"user={USER}"))
        card = ask_to_push(driver)
        action = stored_action(dev, card.get_attribute("data-action-id") or "")
        status, stored = http(dev, "GET", f"/runs/{action['run_id']}/frames?user_id={USER}")
        assert status == 200, stored
        head = {k: action[k] for k in ("session_id", "interaction_id", "run_id")}
        expired = {**head, "type": "action_expired", "frame_seq": len(stored["frames"]), "tool": "git_push"}

        def bring(frame: dict[str, Any], shown: str) -> None:
            reads = driver.execute_script("return window.inboxReads")
            driver.execute_script("window.bring(arguments[0])", frame)
            until(driver, lambda: shown in conversation(driver), f"{frame['type']} shown")
            until(
                driver,
                lambda: driver.execute_script("return window.inboxReads") > reads,
                "the inbox read again",
            )

        bring({"type": "approvals_digest", "session_id": action["session_id"]}, "approvals_digest")
        bring({**expired, "action_id": action["action_id"]}, "expired unanswered")
        driver.execute_script("window.bring(arguments[0])", {**expired, "action_id": action["action_id"]})
        bring({**head, "type": "brand_new_kind", "frame_seq": expired["frame_seq"] + 1}, "brand_new_kind")
        assert conversation(driver).count("expired unanswered") == 1  # brought twice, shown once
        assert by_testid(driver, "errors").text == ""
        # nothing expired on the server: the inbox, read again, still offers the action
        (card,) = approvals(driver)
        by_testid(card, "approve").click()
        until(driver, lambda: pushed(dev, "docs/update"), "docs/update in the bare remote")


# ---------------------------------------------------------------------------- whose and when


def test_each_card_says_which_agent_asked_and_when(dev: DevProcess, remote: Path, page: WebDriver) -> None:
    card = ask_to_push(page)
    action = stored_action(dev, card.get_attribute("data-action-id") or "")
    assert by_testid(card, "approval-agent").text == action["agent_name"] == "author"
    shown = by_testid(card, "approval-time")
    assert shown.get_attribute("datetime") == action["created_at"]
    # the page's local time of created_at (the browser's offset from UTC, in minutes west)
    created = datetime.fromisoformat(action["created_at"].replace("Z", "+00:00"))
    offset = page.execute_script("return new Date(arguments[0]).getTimezoneOffset()", action["created_at"])
    local = created.astimezone(UTC) - timedelta(minutes=int(offset))
    # (a card made just before midnight and drawn after it names the day too)
    expected = {local.strftime("%H:%M"), local.strftime("%Y-%m-%d %H:%M")}
    assert shown.text in expected, (shown.text, action["created_at"], offset)
    assert re.fullmatch(r"just now|\d+ min ago", by_testid(card, "approval-age").text)
    asked = by_testid(card, "approval-asked").text
    assert asked == f"Asked by author at {shown.text} ({by_testid(card, 'approval-age').text})", asked
    by_testid(card, "reject").click()
    by_testid(card, "confirm-reject").click()
    until(page, lambda: not approvals(page), "the card to go")


def test_a_session_of_another_user_is_said_plainly_and_not_retried(dev: DevProcess) -> None:
    session = str(uuid.uuid4())
    body = {
        "agent_name": "author",
        "session_id": session,
        "content": [{"type": "text", "text": "Hello"}],
        "stream": False,
        "auth_context": {"user_id": "someone-else"},
    }
    status, answer = http(dev, "POST", "/invoke", body)
    assert status == 200, answer
    refusals = "WS $connect 403"
    with browser.chromium() as driver:
        before = dev.stderr_text().count(refusals)
        driver.get(page_url(dev, f"user={USER}&session={session}"))
        notice = until(
            driver, lambda: driver.find_elements("css selector", "[data-testid=not-yours]"), "the notice"
        )
        assert notice[0].text == (
            f"Session {session} is not yours ({USER}): it belongs to another user. "
            "Open one of your sessions or start a new one."
        )
        assert by_testid(driver, "connection").text == "not your session"
        assert by_testid(driver, "errors").text == notice[0].text  # said once, with nothing else
        # the page subscribed once and gave up: over several of its reconnect delays, no other attempt
        time.sleep(3.0)
        assert dev.stderr_text().count(refusals) == before + 1, dev.stderr_text()[-2000:]
        assert by_testid(driver, "connection").text == "not your session"
        # the user's own new session works as ever
        by_testid(driver, "new-session").click()
        until(
            driver, lambda: by_testid(driver, "connection").text == "connected", "the new session connected"
        )
        assert not driver.find_elements("css selector", "[data-testid=not-yours]")

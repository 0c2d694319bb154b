"""The local stack's door in Debian's headless chromium: a page served from another origin (a second local
HTTP server on 127.0.0.1) tries what a hostile site would, and the stack's records and bare remote show that
none of it went through; the inbox page still works with the secret in its URL, and hides it."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from riverbeam_local.clients.dev_process import DevProcess, running

from tests.support import browser
from tests.support.devstack import http, remote_refs, secret_of
from tests.support.inbox_page import by_testid, conversation, need_browser, until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

VICTIM = "victim"
ATTACKER = "attacker"

# What a hostile page does once it found the stack's port, run in that page (its origin). It even has the
# stack's secret, to show that the origin check alone stops it; a no-cors request cannot carry it anyway.
# Each attempt's outcome: "opaque" (sent, its answer unreadable), "failed" (refused to the page), "read N"
# (the page read an answer), or for a WebSocket "opened" / "refused".
ATTACK = """
const done = arguments[arguments.length - 1];
const t = arguments[0];
const outcome = (promise) => promise.then(
  (answer) => (answer.type === "opaque" ? "opaque" : `read ${answer.status}`),
  () => "failed",
);
const subscribe = (url) => new Promise((resolve) => {
  const socket = new WebSocket(url);
  const timer = setTimeout(() => resolve("no answer"), 60000);
  socket.onopen = () => { clearTimeout(timer); socket.close(); resolve("opened"); };
  socket.onclose = () => { clearTimeout(timer); resolve("refused"); };
});
const plain = (path, body) => fetch(t.stack + path, {
  method: "POST", mode: "no-cors", headers: { "content-type": "text/plain" }, body: JSON.stringify(body),
});
// a made-up signature: the embedded server checks none
const signed = (scope) =>
  `AWS4-HMAC-SHA256 Credential=x/20260101/us-east-1/${scope}/aws4_request, Signature=0`;
const aws = (target, scope, body) => fetch(t.aws, {
  method: "POST",
  headers: {
    "content-type": "application/x-amz-json-1.0", "x-amz-target": target, authorization: signed(scope),
  },
  body: JSON.stringify(body),
});
const read = `${t.stack}/sessions/${t.victimSession}?user_id=${t.victim}`;
(async () => {
  const found = {};
  found["invoke as text/plain"] = await outcome(plain("/invoke", t.invoke));
  found["invoke as text/plain, read back"] = await outcome(fetch(t.stack + "/invoke", {
    method: "POST", headers: { "content-type": "text/plain" }, body: JSON.stringify(t.invoke),
  }));
  found["invoke as JSON with the secret"] = await outcome(fetch(t.stack + "/invoke", {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${t.secret}` },
    body: JSON.stringify(t.invoke),
  }));
  found["resume as text/plain"] = await outcome(plain("/resume", t.resume));
  found["read a session"] = await outcome(fetch(read));
  found["read a session with the secret"] = await outcome(fetch(read, {
    headers: { authorization: `Bearer ${t.secret}` },
  }));
  const socket = `${t.ws}?session_id=${t.victimSession}&user_id=${t.victim}`;
  found["subscribe"] = await subscribe(socket);
  found["subscribe with the secret"] = await subscribe(`${socket}&secret=${t.secret}`);
  found["DynamoDB Scan"] = await outcome(aws("DynamoDB_20120810.Scan", "dynamodb", { TableName: t.table }));
  found["SQS ReceiveMessage"] = await outcome(aws("AmazonSQS.ReceiveMessage", "sqs", { QueueUrl: t.queue }));
  return found;
})().then(done, (error) => done(String(error)));
"""

# the page's scripts are watched for the Content-Security-Policy's refusals, set before they run
VIOLATIONS = """
window.violations = [];
document.addEventListener("securitypolicyviolation", (event) => {
  window.violations.push(event.violatedDirective);
});
"""
INLINE_SCRIPT = """
const script = document.createElement("script");
script.textContent = "window.inlineRan = true;";
document.body.append(script);
"""


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevProcess]:
    need_browser()
    with running(tmp_path_factory.mktemp("door-browser")) as process:
        yield process


def invoke(session_id: str, user: str, text: str, stream: bool = False) -> dict[str, Any]:
    return {
        "agent_name": "author",
        "session_id": session_id,
        "content": [{"type": "text", "text": text}],
        "stream": stream,
        "auth_context": {"user_id": user},
    }


def record(dev: DevProcess, path: str, user: str) -> tuple[int, Any]:
    return http(dev, "GET", f"{path}?user_id={user}")


def test_a_page_of_another_origin_cannot_drive_the_stack(dev: DevProcess, tmp_path: Path) -> None:
    # the victim's push, waiting for their approval: asked through the API as their own client would
    victim_session, attack_session = str(uuid.uuid4()), str(uuid.uuid4())
    status, asked = http(dev, "POST", "/invoke", invoke(victim_session, VICTIM, "Push docs/update"))
    assert status == 200 and asked["interrupted"], asked
    (action,) = asked["action_required"]
    approval = {
        "agent_name": "author",
        "session_id": victim_session,
        "interaction_id": asked["interaction_id"],
        "actions": [
            {
                "action_id": action["action_id"],
                "kind": "confirmation",
                "request_id": str(uuid.uuid4()),
                "status": "submitted",
                "payload": {"tool": action["tool"], "args": action["args"]},
            }
        ],
        "auth_context": {"user_id": VICTIM},
    }
    embedded = dev.urls["DynamoDB"].removesuffix(" (embedded)")
    target = {
        "stack": dev.http_url,
        "ws": dev.websocket_url,
        "secret": secret_of(dev),
        "invoke": invoke(attack_session, ATTACKER, "Push main", stream=True),
        "resume": approval,
        "victim": VICTIM,
        "victimSession": victim_session,
        "aws": embedded + "/",
        "table": "riverbeam-local",
        "queue": f"{embedded}/123456789012/riverbeam-local-jobs.fifo",
    }
    (tmp_path / "index.html").write_text("<!doctype html><title>Some other site</title><p>Hello")
    with browser.static_site(tmp_path) as site, browser.chromium() as driver:
        driver.get(site + "/")
        assert driver.execute_script("return location.origin") == site != dev.http_url
        found = driver.execute_async_script(ATTACK, target)

    assert found == {
        "invoke as text/plain": "opaque",  # sent blind: the stack refused it (below)
        "invoke as text/plain, read back": "failed",
        "invoke as JSON with the secret": "failed",  # its preflight is refused
        "resume as text/plain": "opaque",
        "read a session": "failed",
        "read a session with the secret": "failed",
        "subscribe": "refused",
        "subscribe with the secret": "refused",
        "DynamoDB Scan": "failed",
        "SQS ReceiveMessage": "failed",
    }, found
    # on the stack's side: no session made, the victim's approval still pending, nothing pushed
    assert record(dev, f"/sessions/{attack_session}", ATTACKER)[0] == 404
    status, stored = record(dev, f"/actions/{action['action_id']}", VICTIM)
    assert status == 200 and stored["status"] == "pending", stored
    assert remote_refs(dev.data_dir) == {}
    log = dev.stderr_text()
    for refused in ("POST /invoke 403 BEM-034", "POST /resume 403 BEM-034", "WS /ws 403 BEM-034"):
        assert refused in log, log


def test_the_inbox_page_takes_its_secret_from_its_url_and_hides_it(dev: DevProcess) -> None:
    secret = secret_of(dev)
    with browser.chromium() as driver:
        driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": VIOLATIONS})
        driver.get(f"{dev.http_url}/?user={VICTIM}#secret={secret}")
        until(driver, lambda: "secret" not in driver.current_url, "the secret off the address bar")
        assert driver.current_url == f"{dev.http_url}/?user={VICTIM}"
        assert driver.execute_script("return sessionStorage.getItem('riverbeam.secret')") == secret
        by_testid(driver, "new-session").click()
        by_testid(driver, "message").send_keys("Hello")
        by_testid(driver, "send").click()
        until(driver, lambda: "I can push a branch" in conversation(driver), "the agent's answer")
        until(driver, lambda: by_testid(driver, "connection").text == "connected", "the subscription")
        driver.refresh()  # the tab keeps the secret: the conversation is read back
        until(driver, lambda: "I can push a branch" in conversation(driver), "the answer after a reload")
        assert by_testid(driver, "errors").text == ""
        # the policy lets the page do all that, and nothing inline
        assert driver.execute_script("return window.violations") == []
        driver.execute_script(INLINE_SCRIPT)
        until(driver, lambda: driver.execute_script("return window.violations.length"), "the refusal")
        assert driver.execute_script("return window.inlineRan === undefined")
        assert "script-src-elem" in driver.execute_script("return window.violations")


def test_the_inbox_page_without_the_secret_says_what_it_needs(dev: DevProcess) -> None:
    with browser.chromium() as driver:
        driver.get(f"{dev.http_url}/?user={VICTIM}")
        by_testid(driver, "new-session").click()
        by_testid(driver, "message").send_keys("Hello")
        by_testid(driver, "send").click()
        until(driver, lambda: "BEM-033: " in by_testid(driver, "errors").text, "the refusal shown")
        assert "I can push a branch" not in conversation(driver)

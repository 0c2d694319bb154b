"""Approvals by mail through `riverbeam dev`: each mail written under the data dir with a link per decision;
a GET of a link shows the action and decides nothing (mail scanners open links); the form's POST decides,
once; a reused or tampered link is refused (401 BEM-099), nothing recorded."""

from __future__ import annotations

import email
import re
import time
import urllib.error
import urllib.request
import uuid
from email.message import EmailMessage
from email.policy import default
from pathlib import Path

import pytest
from riverbeam_local.clients.dev_process import running

from tests.support.devstack import TIMEOUT_SECONDS, assert_none_left, http

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

AGENTS = """
people:
  ana: {email: ana@example.com, groups: [ops]}
agents:
  author:
    tools: [git_push]
    tool_settings:
      git_push:
        approvers: {groups: [ops]}
        self_approval: false
        notify: {email: {to: [ana@example.com]}}
"""


def fetch(url: str, method: str = "GET", data: bytes | None = None) -> tuple[int, str]:
    """A link opened as a browser (or a mail scanner) opens it: no stack secret."""
    request = urllib.request.Request(url, data=data, method=method)
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def wait_for_mail(folder: Path) -> EmailMessage:
    deadline = time.monotonic() + TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        found = sorted(folder.glob("*.eml"))
        if found:
            return email.message_from_bytes(found[0].read_bytes(), policy=default)  # type: ignore[return-value]
        time.sleep(0.1)
    raise AssertionError(f"no mail under {folder}")


def test_a_link_shows_then_its_post_decides_once_and_a_tampered_one_is_refused(tmp_path: Path) -> None:
    agents = tmp_path / "agents.yaml"
    agents.write_text(AGENTS, encoding="utf-8")
    with running(tmp_path / "data", args=("--agents", str(agents))) as dev:
        assert "mail on" in dev.urls["Channels"]
        body = {
            "agent_name": "author",
            "session_id": str(uuid.uuid4()),
            "content": [{"type": "text", "text": 'call git_push {"ref": "docs/<b>mail</b>"}'}],
            "auth_context": {"user_id": "u1"},
        }
        status, result = http(dev, "POST", "/invoke", body)
        assert status == 200 and result["interrupted"], result
        action_id = result["action_required"][0]["action_id"]
        mail = wait_for_mail(tmp_path / "data" / "mail")
        assert mail["To"] == "ana@example.com" and "git_push" in mail["Subject"]
        text = mail.get_content()
        links = dict(re.findall(r"^(Approve|Reject): (http\S+)$", text, re.M))
        assert set(links) == {"Approve", "Reject"} and links["Approve"].startswith(dev.http_url)
        printed = lambda: "Approve: " + links["Approve"] in "".join(dev.stdout + dev.stderr)  # noqa: E731
        deadline = time.monotonic() + TIMEOUT_SECONDS
        while not printed() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert printed()  # the link is printed too

        for _ in range(2):  # a scanner, then the person: nothing decided by either
            status, page = fetch(links["Approve"])
            assert status == 200 and "<form method='post'>" in page and "Approve as ana" in page
            assert "docs/&lt;b&gt;mail&lt;/b&gt;" in page and "<b>mail</b>" not in page  # escaped
        assert http(dev, "GET", f"/actions/{action_id}?user_id=u1")[1]["status"] == "pending"

        token = links["Reject"].rsplit("/", 1)[1]
        tampered = links["Reject"][: -len(token)] + token[:-2] + ("AA" if token[-2:] != "AA" else "BB")
        status, page = fetch(tampered, "POST", b"reason=no")
        assert status == 401 and "BEM-099" in page
        assert http(dev, "GET", f"/actions/{action_id}?user_id=u1")[1]["status"] == "pending"

        status, page = fetch(links["Approve"], "POST", b"")
        assert status == 200 and "You approved git_push" in page
        decided = http(dev, "GET", f"/actions/{action_id}?user_id=u1")[1]
        assert decided["status"] == "resolved" and decided["response"]["who"] == "ana"
        status, page = fetch(links["Approve"], "POST", b"")  # the same link again
        assert status == 401 and "BEM-099" in page and "used before" in page
        assert len(list((tmp_path / "data" / "mail").glob("*.eml"))) == 1  # sent once
    assert_none_left(tmp_path / "data")

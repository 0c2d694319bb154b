"""The command line clients: a malformed --url is a usage error in one line (exit 2, no traceback, nothing
sent), and their JSON shows what a value hides as JSON's own escapes, still parsing to the same value."""

from __future__ import annotations

import json
from typing import Any

import pytest
from riverbeam_local.clients import chat, commands
from riverbeam_local.display import is_hidden

from tests.support.devstack import riverbeam

BAD_URLS = [
    "ht!tp://x",
    "http://[::1",
    "127.0.0.1:3000",
    "http://127.0.0.1:99999",
    "http://127.0.0.1:port",
    "http://",
    "ftp://127.0.0.1:3000",
    "http://127.0.0.1:3000/?user_id=x",
    "http://127.0.0.1:3000\x1b]0;pwned\x07",
]
COMMANDS = [
    ["get", "session", "5f0c3a52-8d6e-4c41-9b7a-2a1d6f3e9c10"],
    ["invoke", "--text", "Push docs/update"],
    ["resume", "--approve", "5f0c3a52-8d6e-4c41-9b7a-2a1d6f3e9c10"],
    ["frames", "5f0c3a52-8d6e-4c41-9b7a-2a1d6f3e9c10"],
]


@pytest.fixture(autouse=True)
def no_request(monkeypatch: pytest.MonkeyPatch) -> None:
    """A malformed URL is refused before any request: one would fail this test."""

    def refused(*_: Any, **__: Any) -> Any:
        raise AssertionError("a request was sent")

    monkeypatch.setattr("riverbeam_local.clients.client.ApiClient.request", refused)
    monkeypatch.setenv("RIVERBEAM_DEV_SECRET", "0123456789abcdef0123456789abcdef")


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
@pytest.mark.parametrize("url", BAD_URLS)
def test_a_malformed_url_is_one_line_and_exit_2(
    command: list[str], url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert commands.main([*command, "--url", url]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(f"riverbeam {command[0]}: --url '") and err.count("\n") == 1, err
    assert "\x1b" not in err and "Traceback" not in err


@pytest.mark.parametrize("url", BAD_URLS)
def test_the_chat_refuses_a_malformed_url_the_same_way(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert chat.main(["--url", url]) == 2
    err = capsys.readouterr().err
    assert err.startswith("riverbeam chat: --url '") and err.count("\n") == 1 and "\x1b" not in err, err


def test_the_installed_command_says_the_same() -> None:
    done = riverbeam("get", "session", "x", "--url", "http://[::1")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (
        "riverbeam get: --url 'http://[::1' is not a URL (Invalid IPv6 URL) (for example http://127.0.0.1:3000)\n"
    )


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:3000", "https://abc.execute-api.eu-west-1.amazonaws.com/v1"]
)
def test_a_well_formed_url_is_used(url: str) -> None:
    with pytest.raises(AssertionError, match="a request was sent"):
        commands.main(["get", "session", "x", "--url", url])


def test_printed_json_escapes_what_the_value_hides_and_parses_to_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    record = {"args": {"ref": "docs/\u202eetadpu\u202c"}, "text": "café \x1b]0;t\x07\x9b\u200b", "n": 1}
    commands._print_json(record)
    commands._print_frame(record)
    document, frame = capsys.readouterr().out.split("\n}\n")
    for shown in (document + "\n}", frame):
        assert json.loads(shown) == record
        assert not any(is_hidden(c) for c in shown if c != "\n")
        assert "docs/\\u202eetadpu\\u202c" in shown and "café" in shown
    assert frame.count("\n") == 1  # one frame a line

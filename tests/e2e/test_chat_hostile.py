"""`riverbeam chat` in a pseudo-terminal against `riverbeam dev` whose agent is hostile (a scripted Bedrock
model, tests.support.hostile_agent): its text, a remote's error and a file's content reach the terminal
with their control characters as visible escapes (no ESC sequence, no C1 control, no bidi control is
written raw), and a ref with bidi characters is asked about escaped, under a warning."""

from __future__ import annotations

import io
import uuid
from collections.abc import Iterator

import pexpect
import pytest
from riverbeam_local.clients.dev_process import DevProcess

from tests.support.devstack import assert_none_left, http, screen, spawn_chat
from tests.support.hostile_agent import (
    HOSTILE_SHOWN,
    RAW_SEQUENCES,
    TROJAN_REF,
    TROJAN_SHOWN,
    hostile_stack,
    reject_pushes_loudly,
)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]
PROMPT = screen("you      >")
USER = "u1"


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevProcess]:
    data_dir = tmp_path_factory.mktemp("hostile") / "data"
    with hostile_stack(data_dir) as process:
        yield process
    assert_none_left(data_dir)


class Terminal:
    """One `riverbeam chat` in a pseudo-terminal; `shown` is everything it wrote to the terminal."""

    def __init__(self, dev: DevProcess) -> None:
        self.session_id = str(uuid.uuid4())
        self.transcript = io.StringIO()
        self.term = spawn_chat(dev, USER, self.session_id, columns=240)
        self.term.logfile_read = self.transcript
        self.term.expect(PROMPT)

    def see(self, text: str) -> None:
        self.term.expect(screen(text))

    def say(self, line: str) -> None:
        self.term.send(line + "\r")

    @property
    def shown(self) -> str:
        return self.transcript.getvalue()

    def assert_nothing_raw(self) -> None:
        """No hostile sequence reached the terminal as it was sent: no OSC at all (neither rich nor
        prompt_toolkit writes one), no C1 control, no bidi control."""
        shown = self.shown
        for raw in RAW_SEQUENCES:
            assert raw not in shown, (raw, shown[-2000:])
        assert "\x1b]" not in shown and not any("\x80" <= c <= "\x9f" for c in shown)
        assert not any(c in shown for c in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")

    def leave(self) -> None:
        self.say("/quit")
        self.term.expect(pexpect.EOF)
        self.term.close()
        assert self.term.exitstatus == 0

    def stop(self) -> None:
        if self.term.isalive():
            self.term.close(force=True)


@pytest.fixture
def chat(dev: DevProcess) -> Iterator[Terminal]:
    opened = Terminal(dev)
    yield opened
    opened.stop()


def test_the_agents_terminal_sequences_are_shown_not_obeyed(chat: Terminal) -> None:
    chat.say("Say something hostile")
    chat.see(f"author   : {HOSTILE_SHOWN}")
    chat.term.expect(PROMPT)
    chat.assert_nothing_raw()
    chat.leave()


def test_a_remotes_error_is_shown_escaped_and_names_no_server_path(dev: DevProcess, chat: Terminal) -> None:
    reject_pushes_loudly(dev.data_dir)
    try:
        chat.say("Push docs/update")
        chat.see('Approve git_push {"ref": "docs/update"}? [y/N/a]')
        chat.say("y")
        # dulwich, which pushes, turns every control or non-ASCII byte the remote sends into "?" itself
        chat.see("result   git_push error BEM-330 push of docs/update to origin rejected: remote: ?]0;pwned")
        words = "remote: ?]0;pwned-by-remote??[3Arefused?[2K ???reversed"
        refused = "git_push failed: BEM-330: push of docs/update to origin rejected"
        chat.see(f"author   : The tool said: {refused}: {words}")
        chat.see("error: failed to push some refs to '../remote.git'")
        chat.term.expect(PROMPT)
    finally:
        (dev.data_dir / "remote.git" / "hooks" / "pre-receive").unlink()
    chat.assert_nothing_raw()
    assert "\x1b[3Arefused" not in chat.shown
    assert str(dev.data_dir) not in chat.shown and str(dev.data_dir.resolve()) not in chat.shown
    chat.leave()


def test_a_files_content_is_shown_escaped(dev: DevProcess, chat: Terminal) -> None:
    content = "Release notes\x1b]0;pwned-by-file\x07\x1b[1;1H\x1b[2J\u202egnp.exe\nsecond line\n"
    (dev.data_dir / "work" / "notes.txt").write_text(content)
    chat.say("Read the notes")
    first_line = "Release notes\\x1b]0;pwned-by-file\\x07\\x1b[1;1H\\x1b[2J\\u202egnp.exe"
    chat.see(f"result   read_file ok path=notes.txt text={first_line}...")
    chat.see(f"author   : The tool said: notes.txt | {first_line}")
    chat.see("second line")
    chat.term.expect(PROMPT)
    chat.assert_nothing_raw()
    assert "\x1b[1;1H\x1b[2J" not in chat.shown
    chat.leave()


def test_a_bidi_ref_is_asked_about_escaped_under_a_warning(dev: DevProcess, chat: Terminal) -> None:
    chat.say("Push the tricky branch")
    chat.see(f'tool     git_push {{"ref": "{TROJAN_SHOWN}"}} needs approval')
    chat.see(
        "warning  args hold invisible or bidi characters (shown as \\u escapes): "
        "U+202E RIGHT-TO-LEFT OVERRIDE, U+202C POP DIRECTIONAL FORMATTING"
    )
    chat.see(f'Approve git_push {{"ref": "{TROJAN_SHOWN}"}}? [y/N/a]')
    chat.say("n")
    chat.see("Reason (optional):")
    chat.say("that is not docs/update")
    chat.see("rejected git_push: that is not docs/update")
    chat.term.expect(PROMPT)
    chat.assert_nothing_raw()
    # what was asked about is the ref with its bidi controls, refused: nothing ran
    status, page = http(dev, "GET", f"/sessions/{chat.session_id}/actions?user_id={USER}")
    assert status == 200, page
    (action,) = page["actions"]
    assert (action["args"], action["status"]) == ({"ref": TROJAN_REF}, "cancelled")
    chat.leave()

"""What the chat, the demo and the CLI show of untrusted text: control, bidi and invisible characters as
visible escapes, JSON still JSON of the same value, and a warning naming what args hide."""

from __future__ import annotations

import io
import json
import unicodedata
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console
from riverbeam_local.clients.view import View, outcome_summary
from riverbeam_local.display import hidden_warning, is_hidden, visible, visible_json

# Trojan Source: drawn as "docs/update", it is another ref
TROJAN_REF = "docs/\u202eetadpu\u202c"
BIDI = [chr(c) for c in [*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F, 0x061C]]
INVISIBLE = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\ufe0f", "\U000e0041", "\u3164"]
CONTROLS = [chr(c) for c in [*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0)]]


def _hides_nothing(text: str, kept: str = "") -> bool:
    return not any(is_hidden(c) for c in text if c not in kept)


@pytest.mark.parametrize("char", BIDI + INVISIBLE + CONTROLS + ["\u2028", "\u2029", "\ud800"])
def test_every_hidden_character_is_escaped_visibly(char: str) -> None:
    shown = visible(f"a{char}b")
    assert char not in shown and _hides_nothing(shown)
    assert shown.startswith("a\\") and shown.endswith("b")


def test_terminal_sequences_show_as_text() -> None:
    hostile = "ok\x1b]0;pwned\x07\x1b[2A\r\x1b[2Kdone\x9b31m"
    assert visible(hostile) == "ok\\x1b]0;pwned\\x07\\x1b[2A\\r\\x1b[2Kdone\\u009b31m"


def test_bidi_and_zero_width_show_as_their_code() -> None:
    assert visible(TROJAN_REF) == "docs/\\u202eetadpu\\u202c"
    assert visible("main\u200b") == "main\\u200b"
    assert visible("tag\U000e0041") == "tag\\U000e0041"


def test_text_without_hidden_characters_is_unchanged() -> None:
    for text in ["Pushed docs/update.", "café ✓ 日本語 עברית", "C:\\path\\u202e", ""]:
        assert visible(text) == text


def test_text_of_several_lines_keeps_its_lines_and_tabs_but_not_a_carriage_return() -> None:
    assert visible("a\n\tb\r\nc", lines=True) == "a\n\tb\\r\nc"
    assert visible("a\n\tb") == "a\\n\\tb"


def test_json_shows_the_escape_and_parses_to_the_same_value() -> None:
    args = {"ref": TROJAN_REF, "note": "x\x7f\x9b\U000e0041\ud800 é"}
    shown = visible_json(args)
    assert shown == ('{"ref": "docs/\\u202eetadpu\\u202c", "note": "x\\u007f\\u009b\\udb40\\udc41\\ud800 é"}')
    assert json.loads(shown) == args


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@given(json_values, st.sampled_from([None, 2]))
def test_any_json_stays_json_of_the_same_value_and_hides_nothing(value: Any, indent: int | None) -> None:
    shown = visible_json(value, indent=indent)
    assert json.loads(shown) == value
    assert _hides_nothing(shown, kept="\n")


@given(st.text())
def test_any_text_hides_nothing_once_shown(text: str) -> None:
    assert _hides_nothing(visible(text))
    assert _hides_nothing(visible(text, lines=True), kept="\n\t")


def test_the_warning_names_what_the_args_hide() -> None:
    warning = hidden_warning({"ref": TROJAN_REF})
    assert warning is not None and "invisible or bidi" in warning
    assert "U+202E RIGHT-TO-LEFT OVERRIDE" in warning and "U+202C POP DIRECTIONAL FORMATTING" in warning
    assert "U+200B ZERO WIDTH SPACE" in (hidden_warning({"k\u200b": 1}) or "")  # keys too
    assert "U+001B control" in (hidden_warning({"a": [{"b": "\x1b[2J"}]}) or "")  # at any depth
    many = hidden_warning({"ref": "".join(BIDI)})
    assert many is not None and many.endswith(f"and {len(BIDI) - 5} more")


@pytest.mark.parametrize("args", [{"ref": "docs/update"}, {"message": "line 1\nline 2\ttab\r\n"}, {}, [1]])
def test_no_warning_for_args_that_hide_nothing(args: Any) -> None:
    assert hidden_warning(args) is None


def test_the_categories_escaped_are_those_drawn_as_something_else() -> None:
    assert all(is_hidden(c) for c in BIDI + INVISIBLE + CONTROLS)
    assert not any(is_hidden(c) for c in "aé日 \u00a0✓\U0001f600")
    assert unicodedata.category("\u202e") == "Cf"


# ---------------------------------------------------------------------------- the chat's and demo's view


def shown(*frames: dict[str, Any]) -> str:
    out = io.StringIO()
    view = View(Console(file=out, width=200, color_system=None, highlight=False, soft_wrap=True))
    for frame in frames:
        view.frame(frame, "author")
    return out.getvalue()


def test_hostile_agent_text_reaches_the_terminal_escaped() -> None:
    text = shown(
        {"type": "text_delta", "text": "Done.\x1b]0;pwned\x07"},
        {"type": "text_delta", "text": "\x1b"},  # a sequence split across deltas
        {"type": "text_delta", "text": "[2A\r\x1b[2K[bold]not markup[/bold]\nnext line"},
        {"type": "done"},
    )
    assert "\x1b" not in text and "\r" not in text
    assert text == (
        "author   : Done.\\x1b]0;pwned\\x07\\x1b[2A\\r\\x1b[2K[bold]not markup[/bold]\nnext line\n"
    )


def test_a_tool_call_result_and_error_are_escaped() -> None:
    text = shown(
        {"type": "tool_call", "name": "git_push", "args": {"ref": TROJAN_REF}, "confirm_required": True},
        {
            "type": "tool_result",
            "name": "read_file",
            "status": "ok",
            "output": {"path": "notes.txt", "text": "\x1b[31mred\x1b[0m\nsecond line"},
        },
        {
            "type": "tool_result",
            "name": "git_push",
            "status": "error",
            "error": {"code": "BEM-330", "message": "rejected: remote: \x1b]0;x\x07\u202e"},
        },
        {"type": "error", "code": "BEM-500", "message": "a\x9bb"},
        {"type": "done"},
    )
    assert not any(is_hidden(c) for c in text if c != "\n")
    assert text.splitlines() == [
        'tool     git_push {"ref": "docs/\\u202eetadpu\\u202c"} needs approval',
        "result   read_file ok path=notes.txt text=\\x1b[31mred\\x1b[0m...",
        "result   git_push error BEM-330 rejected: remote: \\x1b]0;x\\x07\\u202e",
        "error    BEM-500 a\\u009bb",
    ]


def test_a_long_value_is_cut_before_it_is_escaped() -> None:
    summary = outcome_summary({"status": "ok", "output": {"text": "\u202e" * 100}})
    assert summary == "ok text=" + "\\u202e" * 57 + "..."

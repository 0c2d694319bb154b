"""Untrusted text made safe to show in a terminal: what an approver sees is what runs.

An agent's text, a tool's args and output, a remote's error can hold characters that a terminal acts on
or that are drawn as something else: control characters (C0, DEL, C1: an ESC sequence retitles the
window, moves the cursor, erases a line), bidi controls (`docs/\\u202eetadpu\\u202c` is drawn as
`docs/update`) and invisible ones (zero-width spaces and joiners, other format characters, variation
selectors, tags). Each is shown as a visible escape instead: `\\x1b` for C0 and DEL, `\\u202e` for the
rest (`\\U000e0041` beyond the BMP). In JSON the escape is JSON's own (`\\u202e`, a surrogate pair beyond
the BMP), so the JSON shown stays valid and parses to the same value. The inbox page does the same in
inbox/static/inbox/display.js."""

from __future__ import annotations

import json
import unicodedata
from typing import Any

# Other (control, format, surrogate) and the line and paragraph separators
HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
# drawn as nothing though not of those categories: variation selectors, the combining grapheme joiner,
# the Hangul and Khmer fillers
INVISIBLE_RANGES = (
    (0x034F, 0x034F),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFFA0, 0xFFA0),
    (0xE0100, 0xE01EF),
)
# kept as they are in text of several lines; in JSON they are escaped as \n, \t, \r anyway
LAYOUT = frozenset("\n\t")
# what a warning names: any hidden character but the layout JSON always escapes in its familiar way
UNREMARKABLE = frozenset("\n\t\r")
SHORT_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}
MAX_NAMED = 5


def _invisible(code: int) -> bool:
    return any(low <= code <= high for low, high in INVISIBLE_RANGES)


def is_hidden(char: str) -> bool:
    """Whether `char` is acted on or drawn as something else rather than shown: it is escaped."""
    return unicodedata.category(char) in HIDDEN_CATEGORIES or _invisible(ord(char))


def _clean(text: str) -> bool:
    """No hidden character at all (the common case, checked fast): isprintable() is False for every
    hidden category, and the invisible ranges are the rest."""
    if not text.isprintable():
        return False
    return text.isascii() or not any(_invisible(ord(c)) for c in text if ord(c) >= 0x034F)


def escape(char: str) -> str:
    """`char` as a visible escape: `\\x1b`, `\\u202e`, `\\U000e0041`."""
    code = ord(char)
    if char in SHORT_ESCAPES:
        return SHORT_ESCAPES[char]
    if code < 0x20 or code == 0x7F:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def visible(text: str, *, lines: bool = False) -> str:
    """`text` with every hidden character escaped; with `lines`, newlines and tabs are kept (text of
    several lines, an agent's answer), otherwise they are escaped too (text of one line)."""
    if _clean(text):
        return text
    kept = LAYOUT if lines else frozenset()
    return "".join(escape(c) if c not in kept and is_hidden(c) else c for c in text)


def _json_escape(char: str) -> str:
    """`char` as JSON's escape: one \\uXXXX, or a surrogate pair beyond the BMP."""
    units = char.encode("utf-16-be", "surrogatepass")
    return "".join(f"\\u{int.from_bytes(units[i : i + 2], 'big'):04x}" for i in range(0, len(units), 2))


def visible_json(value: Any, *, indent: int | None = None) -> str:
    """`value` as JSON, non-ASCII text kept as it is but every hidden character escaped: valid JSON of
    the same value. (JSON escapes C0 itself; outside its strings it writes only ASCII, so an escape
    anywhere in its output is inside a string.)"""
    text = json.dumps(value, ensure_ascii=False, indent=indent)
    if _clean(text.replace("\n", "")):
        return text
    return "".join(_json_escape(c) if c != "\n" and is_hidden(c) else c for c in text)


def _strings(value: Any) -> list[str]:
    """Every string in `value`: object keys, values, list items, at any depth."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for key, item in value.items() for s in (*_strings(key), *_strings(item))]
    if isinstance(value, list | tuple):
        return [s for item in value for s in _strings(item)]
    return []


def hidden_in(value: Any) -> list[str]:
    """The remarkable hidden characters in `value`'s strings, each once, in order of appearance."""
    found: dict[str, None] = {}
    for text in _strings(value):
        if not _clean(text):
            found.update((c, None) for c in text if c not in UNREMARKABLE and is_hidden(c))
    return list(found)


def _named(char: str) -> str:
    """`U+202E RIGHT-TO-LEFT OVERRIDE`; a control character has no name in Unicode's database."""
    name = unicodedata.name(char, "") or ("control" if unicodedata.category(char) == "Cc" else "unnamed")
    return f"U+{ord(char):04X} {name}"


def hidden_warning(args: Any) -> str | None:
    """What an approver is told when `args` hold characters that are not what they seem, or None."""
    found = hidden_in(args)
    if not found:
        return None
    named = ", ".join(_named(c) for c in found[:MAX_NAMED])
    more = f" and {len(found) - MAX_NAMED} more" if len(found) > MAX_NAMED else ""
    return f"args hold invisible or bidi characters (shown as \\u escapes): {named}{more}"

"""How the chat and the demo show a conversation: one line per event, a label in a column of its own
(`you      > ...`, `author   : ...`, `tool     git_push {...} needs approval`), text as it streams.
Everything shown goes through riverbeam_local.display first (control, bidi and invisible characters as
visible escapes), and is written as rich Text, never as markup."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.text import Text

from ..display import visible, visible_json
from .client import Json

LABEL_WIDTH = 8
STYLES = {
    "you": "bold cyan",
    "tool": "bold yellow",
    "result": "bold yellow",
    "approved": "bold green",
    "rejected": "bold red",
    "expired": "bold red",
    "error": "bold red",
    "remote": "bold magenta",
    "warning": "bold red",
    "refused": "bold red",
    "revoked": "bold green",
}
SHORT_TEXT = 60
# the @ids of the policies every agent's policy holds (CONTRACT 10): not a decision of the agent's own
BASELINE = "baseline-"
# a result's error that means the call was refused before anyone was asked (CONTRACT 3.12): args that do
# not fit the tool's schema, or hold a number the policy cannot read
NOT_ASKED = {"BEM-332": "the args do not fit", "BEM-082": "the policy cannot read the args"}
# a tool's error is shown in at most this many lines (the remote's words, as git prints them)
ERROR_LINES = 6
# a tool's error is its one line: long enough for a remote's own words after the code's
ERROR_TEXT = 300


def compact(value: Any) -> str:
    """Args as the approval question shows them: JSON on one line, non-ASCII kept, hidden characters
    escaped (valid JSON of the same value)."""
    return visible_json(value)


def _short(value: Any) -> str:
    """A value in a few words: its first line, cut (then escaped, so no escape is cut in half)."""
    if not isinstance(value, str):
        text = compact(value)
        return text if len(text) <= SHORT_TEXT else text[: SHORT_TEXT - 3] + "..."
    if len(value) == 40 and all(c in "0123456789abcdef" for c in value):
        return value[:7]  # a commit id
    first = value.split("\n", 1)[0]
    return visible(first if len(first) <= SHORT_TEXT and first == value else first[: SHORT_TEXT - 3] + "...")


def _error_text(message: Any) -> str:
    """An error's message, cut, then escaped: its lines (at most `ERROR_LINES`) kept as lines, to be shown
    under each other."""
    text = str(message)
    kept = text if len(text) <= ERROR_TEXT else text[: ERROR_TEXT - 3]
    lines = kept.split("\n")
    cut = len(kept) < len(text) or len(lines) > ERROR_LINES
    return "\n".join(visible(line) for line in lines[:ERROR_LINES]) + ("..." if cut else "")


def decided(frame: Json) -> str:
    """How a tool call was decided, after the call: asked, or run or refused without asking and by what
    (the agent's policies by id, a standing grant; the baseline alone is a tool that needs no approval)."""
    if frame.get("confirm_required"):
        return " needs approval"
    by = frame.get("decided_by") if isinstance(frame.get("decided_by"), dict) else None
    if by is None or frame.get("decision") not in ("allow", "deny"):
        return ""
    allowed = frame["decision"] == "allow"
    how = "runs, allowed" if allowed else "refused"
    if by.get("kind") == "grant":
        return f" {how} by a standing grant"
    ids = by.get("policy_ids") if by.get("kind") == "policy" else None
    named = [str(i) for i in ids if not str(i).startswith(BASELINE)] if isinstance(ids, list) else []
    if named:
        return f" {how} by policy {visible(', '.join(named))}"
    return " runs (it needs no approval)" if allowed else " refused"


def outcome_summary(frame: Json) -> str:
    """A tool_result in a few words: `ok ref=docs/update commit=1a2b3c4`, `error BEM-330 ...`."""
    status = str(frame.get("status"))
    error = frame.get("error")
    if isinstance(error, dict):
        return f"{status} {error.get('code', '')} {_error_text(error.get('message', ''))}".rstrip()
    output = frame.get("output")
    if isinstance(output, dict):
        scalars = {k: v for k, v in output.items() if not isinstance(v, dict | list) and k != "summary"}
        return " ".join([status, *(f"{k}={_short(v)}" for k, v in scalars.items())])
    return status if output is None else f"{status} {_short(output)}"


class View:
    """Writes the conversation to a rich Console (never while a prompt is open: the caller sees to it)."""

    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console(highlight=False, soft_wrap=True)
        self._speaking: str | None = None  # the agent whose text is streaming on the current line
        # each tool call seen: whether it came undecided (a call that cannot run, refused unasked)
        self._calls: dict[str, bool] = {}
        # a tool's failure comes as an `error` frame, then its `tool_result`: the error is held, and shown
        # only if anything but that tool_result follows
        self._held_error: Json | None = None

    def line(self, label: str, text: str, sigil: str = "") -> None:
        """One line: `text` with every hidden character escaped, its newlines too."""
        self._show_held_error()
        self.end_text()
        self.console.print(self._label(label, sigil), Text(visible(text)), sep="")

    def lines(self, label: str, text: str) -> None:
        """A line of several: the first beside the label, the others under it."""
        first, *rest = text.split("\n")
        self.line(label, first)
        for line in rest:
            self.console.print(Text(" " * (LABEL_WIDTH + 1) + visible(line)))

    def _result(self, frame: Json) -> None:
        """A tool's result; a call refused before anyone was asked says why (CONTRACT 3.12)."""
        found = frame.get("error")
        error: Json = found if isinstance(found, dict) else {}
        why = NOT_ASKED.get(str(error.get("code"))) if frame.get("status") == "error" else None
        undecided = self._calls.get(str(frame.get("tool_call_id")), True)  # True: no call frame seen
        if why and undecided:
            self.lines("refused", f"{_error_text(error.get('message', ''))} (not asked: {why})")
        else:
            self.lines("result", f"{frame.get('name')} {outcome_summary(frame)}")

    def _label(self, label: str, sigil: str) -> Text:
        head = Text(f"{visible(label):<{LABEL_WIDTH}} ", style=STYLES.get(label, "bold blue"))
        return head + Text(f"{sigil} ") if sigil else head

    def text(self, agent: str, delta: str) -> None:
        """An agent's text as it streams: its lines and tabs kept, any other hidden character escaped
        (one character at a time, so a sequence split across deltas is escaped all the same)."""
        if self._speaking != agent:
            self.end_text()
            self.console.print(self._label(agent, ":"), end="")
            self._speaking = agent
        self.console.print(Text(visible(delta, lines=True)), end="")

    def end_text(self) -> None:
        if self._speaking is not None:
            self.console.print()
            self._speaking = None

    def settle(self) -> None:
        """The run's frames have ended: show what is held, end the streaming line."""
        self._show_held_error()
        self.end_text()

    def _show_held_error(self) -> None:
        held, self._held_error = self._held_error, None
        if held is not None:
            self.line("error", f"{held.get('code')} {held.get('message')}")

    def _reports(self, frame: Json) -> bool:
        """Whether `frame` is the tool_result of the held error: the same failure, said once."""
        error = frame.get("error")
        return (
            self._held_error is not None
            and frame.get("type") == "tool_result"
            and isinstance(error, dict)
            and error.get("code") == self._held_error.get("code")
        )

    def frame(self, frame: Json, agent: str) -> None:
        kind = frame.get("type")
        if self._reports(frame):
            self._held_error = None
        self._show_held_error()
        if kind == "error":
            self._held_error = frame
        elif kind == "text_delta":
            self.text(agent, str(frame.get("text", "")))
        elif kind == "tool_call":
            call = f"{frame.get('name')} {compact(frame.get('args', {}))}"
            self._calls[str(frame.get("tool_call_id"))] = "decision" in frame and frame["decision"] is None
            self.line("tool", call + decided(frame))
        elif kind == "tool_result":
            self._result(frame)
        elif kind == "action_expired":  # the sweep's, after the run's done
            self.line("expired", f"{frame.get('tool')} was not answered in time ({frame.get('action_id')})")
        elif kind == "done":
            self.settle()

"""How the chat and the demo show frames: one line per event, the sweep's expiry among them."""

from __future__ import annotations

import io

from rich.console import Console
from riverbeam_local.view import View


def shown(*frames: dict[str, object]) -> str:
    out = io.StringIO()
    view = View(Console(file=out, width=120, color_system=None, highlight=False, soft_wrap=True))
    for frame in frames:
        view.frame(frame, "author")
    return out.getvalue()


def test_an_expiry_frame_says_which_tool_was_not_answered() -> None:
    text = shown({"type": "action_expired", "tool": "git_push", "action_id": "a1", "frame_seq": 4})
    assert text == "expired  git_push was not answered in time (a1)\n"


def test_text_then_a_tool_call_then_a_frame_of_a_kind_it_does_not_know() -> None:
    text = shown(
        {"type": "text_delta", "text": "I will push."},
        {"type": "tool_call", "name": "git_push", "args": {"ref": "main"}, "confirm_required": True},
        {"type": "something_new", "frame_seq": 9},
    )
    assert text == 'author   : I will push.\ntool     git_push {"ref": "main"} needs approval\n'

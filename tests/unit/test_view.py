"""How the chat and the demo show frames: one line per event, the sweep's expiry among them."""

from __future__ import annotations

import io

from rich.console import Console
from riverbeam_local.clients.view import View


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


def test_a_failed_push_is_shown_once_with_the_remotes_words_line_by_line() -> None:
    # the runner sends a tool's failure as an error frame, then the tool_result that carries it
    message = (
        "push of docs/update to origin rejected: remote: no pushes today\nerror: failed to push some refs"
    )
    text = shown(
        {"type": "error", "code": "BEM-330", "message": message},
        {
            "type": "tool_result",
            "name": "git_push",
            "status": "error",
            "error": {"code": "BEM-330", "message": message},
        },
        {"type": "text_delta", "text": "The push failed."},
        {"type": "done"},
    )
    assert text.splitlines() == [  # its lines under each other, as git prints them (no literal \\n)
        "result   git_push error BEM-330 push of docs/update to origin rejected: remote: no pushes today",
        "         error: failed to push some refs",
        "author   : The push failed.",
    ]


def test_a_runs_failure_is_shown_before_it_ends() -> None:
    text = shown({"type": "error", "code": "BEM-500", "message": "the agent failed"}, {"type": "done"})
    assert text == "error    BEM-500 the agent failed\n"


def test_an_error_of_another_failure_than_the_next_result_is_shown_too() -> None:
    text = shown(
        {"type": "error", "code": "BEM-345", "message": "the model is busy"},
        {
            "type": "tool_result",
            "name": "git_push",
            "status": "error",
            "error": {"code": "BEM-330", "message": "no"},
        },
        {"type": "done"},
    )
    assert text.splitlines() == ["error    BEM-345 the model is busy", "result   git_push error BEM-330 no"]


def test_a_long_error_is_one_line_cut() -> None:
    error = {"code": "BEM-330", "message": "x" * 1000}
    (line,) = shown(
        {"type": "tool_result", "name": "git_push", "status": "error", "error": error}
    ).splitlines()
    assert line == "result   git_push error BEM-330 " + "x" * 297 + "..."

"""`riverbeam chat --session ID`: a session taken up again. Its last turns are shown as the chat shows a
conversation, and its pending approvals are asked before the prompt (a Ctrl-C while the agent worked, or
another client, may have left some that no client shows again otherwise)."""

from __future__ import annotations

import urllib.parse
from typing import TYPE_CHECKING

from .client import ApiClient, ApiError, ClientError, Json
from .times import said_when

if TYPE_CHECKING:
    from .chat import Chat
    from .view import View

# the messages shown of a session taken up again (its last ones)
RECENT_MESSAGES = 12
# pending actions asked at most, in pages of the session's actions read (oldest first)
MAX_PENDING_PAGES = 10


def recent_messages(api: ApiClient, session_id: str) -> list[Json] | None:
    """The session's last messages, oldest first; None for a session that does not exist yet."""
    try:
        page = api.get("messages", session_id)
    except ApiError as error:
        if error.status == 404:
            return None
        raise
    messages: list[Json] = page.get("messages", [])
    return messages[-RECENT_MESSAGES:]


def show_turns(view: View, messages: list[Json], agent: str) -> None:
    """Each message as the chat showed it when it happened: what was typed, the agent's words, its tool
    calls and their results (stored parts are read as the frames that carried them)."""
    for message in messages:
        for part in message.get("content", []):
            kind = part.get("type")
            if kind == "text" and message.get("role") == "human":
                view.line("you", str(part.get("text", "")), ">")
            elif kind == "text":
                view.frame({"type": "text_delta", "text": part.get("text", "")}, agent)
            elif kind in ("tool_call", "tool_result"):
                view.frame(part, agent)
    view.settle()


def pending_actions(api: ApiClient, session_id: str) -> list[Json]:
    """The session's pending actions, oldest first (a bounded number of pages)."""
    path = f"/sessions/{urllib.parse.quote(session_id, safe='')}/actions"
    found: list[Json] = []
    after = None
    for _ in range(MAX_PENDING_PAGES):
        try:
            page = api.request("GET", path, status="pending", after=after)
        except ApiError as error:
            if error.status == 404:  # no such session (yet): nothing waits
                return found
            raise
        found += page.get("actions", [])
        after = page.get("next_after")
        if after is None:
            break
    return found


async def take_up(chat: Chat) -> None:
    """Show the session's last turns, then ask its pending approvals, interaction by interaction, and show
    the run each answer starts (and answer what that run asks in turn)."""
    messages = recent_messages(chat.api, chat.session_id)
    if messages is None:  # a new session: nothing to take up
        return
    if messages:
        chat.view.line("session", f"the last {len(messages)} messages of this session")
        show_turns(chat.view, messages, chat.agent)
    waiting: dict[str, list[Json]] = {}
    for action in pending_actions(chat.api, chat.session_id):
        waiting.setdefault(action["interaction_id"], []).append(action)
    for actions in waiting.values():
        since = said_when(actions[0].get("created_at"))
        chat.view.line("note", f"{len(actions)} approval(s) waiting" + (f" since {since}" if since else ""))
        if not await answer_until_done(chat, actions[0], actions):
            return  # Ctrl-C at a question: the prompt, the rest left pending


async def answer_until_done(chat: Chat, asked: Json, actions: list[Json]) -> bool:
    """Ask `actions` (of the interaction `asked` names), resume, and go on while its runs ask; False when
    the person left a question unanswered."""
    try:
        while actions:
            responses = await chat.answer(actions)
            if responses is None:
                return False
            result = await chat.interruptible(chat._resume(asked, responses))
            asked, actions = result or {}, list((result or {}).get("action_required") or [])
    except ClientError as error:  # expired meanwhile, answered by another client: said, and go on
        chat.view.line("error", error.line())
    return True

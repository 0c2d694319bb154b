"""`riverbeam chat --approver`: answer, one after another, the approvals you may answer in any session (your
inbox, GET /approvals), with the chat's own question (`Approve <tool> <args>? [y/N]`, keys typed before it
discarded). Each answer is a resume of the action's session; one short of the action's quorum is a vote,
said as such. It waits for more (reading the inbox every few seconds) until /quit, Ctrl-D or Ctrl-C."""

from __future__ import annotations

import asyncio

from ..display import visible
from .chat import Chat
from .client import ClientError, Json

POLL_SECONDS = 2.0


def _who_asked(action: Json) -> str:
    line = f"{action['user_id']} asks in session {action['session_id']} (agent {action['agent_name']})"
    approvals = action.get("approvals")
    if approvals:
        given = [v["user_id"] for v in action.get("votes", []) if v["status"] == "submitted"]
        line += f"; {len(given)} of {approvals['required']} approvals" + (
            f": {', '.join(given)}" if given else ""
        )
    return visible(line)


def _answered(chat: Chat, action: Json, ack: Json) -> None:
    if "pending" in ack:
        for waiting in ack["pending"]:
            votes, required = len(waiting["votes"]), waiting["required"]
            chat.view.line("note", f"your vote is recorded ({votes} of {required} approvals)")
    else:
        chat.view.line("note", f"decided: the run {ack['run_id']} goes on in {action['session_id']}")


async def answer_inbox(chat: Chat) -> int:
    """Ask about each approval of the caller's inbox as it comes; 0 when the person leaves."""
    asked: set[str] = set()
    said_empty = False
    while True:
        page = await asyncio.to_thread(chat.api.approvals, 100)
        waiting = [a for a in page.get("actions", []) if a["action_id"] not in asked]
        if not waiting and not said_empty:
            chat.view.line("note", "nothing waits for you; waiting for approvals (Ctrl-C leaves)")
        said_empty = not waiting
        for action in waiting:
            asked.add(action["action_id"])
            chat.view.line("tool", _who_asked(action))
            try:
                responses = await chat.answer([action])
            except EOFError:
                return 0
            if responses is None:
                return 0
            try:
                _answered(chat, action, await asyncio.to_thread(chat.api.resume, action, responses))
            except ClientError as error:
                chat.view.line("error", error.line())
        if not waiting:
            await asyncio.sleep(POLL_SECONDS)

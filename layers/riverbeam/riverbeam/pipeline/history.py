"""The conversation a step's runner is given: the session's last messages (the runner's `history_window`,
agents.DEFAULT_HISTORY_WINDOW unless it says otherwise; None: all of them), starting at a person's message,
read with the session in one request. So a step reads no more of a long session than its model is given."""

from __future__ import annotations

from beam_store import BeamStore, Message, Session

from ..agents import DEFAULT_HISTORY_WINDOW, AgentRunner


def window(runner: AgentRunner) -> int | None:
    """How many of the session's last messages the runner is given (None: all)."""
    last = getattr(runner, "history_window", DEFAULT_HISTORY_WINDOW)
    return None if last is None else max(int(last), 1)


def is_persons(message: Message) -> bool:
    return message.role == "human" and message.type == "message"


def read(
    store: BeamStore, session_id: str, runner: AgentRunner, *, whole_if_cut: bool = True
) -> tuple[Session | None, list[Message]]:
    """The session and the conversation its runner is given, from the first person's message in the
    window. A full window without one (a single interaction longer than the window) is read whole where
    `whole_if_cut`, else dropped (an invoke: its own input starts the conversation)."""
    last = window(runner)
    if last is None:
        return store.get_session_with_messages(session_id)
    session, messages = store.get_session_with_messages(session_id, last=last)
    start = next((i for i, m in enumerate(messages) if is_persons(m)), None)
    if start is not None:
        return session, messages[start:]
    if len(messages) < last:
        return session, messages
    if whole_if_cut:
        return store.get_session_with_messages(session_id)
    return session, []

"""The conversation a step's runner is given (CONTRACT 3.11): the session's other interactions that have
ended, each whole and in the order they began, then the step's own interaction's messages. Interactions
still in progress (running, or waiting for a person: the session's `open_interactions`) are left out, so
answers to two waiting interactions may come in any order and a tool's result always follows its call.

It is read from the session's last messages (the runner's `history_window`, agents.DEFAULT_HISTORY_WINDOW
unless it says otherwise; None: all of them), with the session, in one request: a step reads no more of a
long session than its model is given. An ended interaction the window cut is left out; the step's own,
where the window cut it, is read from its first message on (one more request, that case only) or, for an
invoke, started at a person's message of it."""

from __future__ import annotations

from collections.abc import Sequence

from beam_store import BeamStore, Message, Session

from ..agent.registry import DEFAULT_HISTORY_WINDOW, AgentRunner


def window(runner: AgentRunner) -> int | None:
    """How many of the session's last messages the runner is given (None: all)."""
    last = getattr(runner, "history_window", DEFAULT_HISTORY_WINDOW)
    return None if last is None else max(int(last), 1)


def is_persons(message: Message) -> bool:
    return message.role == "human" and message.type == "message"


def by_interaction(messages: Sequence[Message]) -> dict[str, list[Message]]:
    """The messages of each interaction, the interactions in the order their first message came."""
    grouped: dict[str, list[Message]] = {}
    for message in messages:
        grouped.setdefault(message.interaction_id, []).append(message)
    return grouped


def arrange(
    messages: Sequence[Message], interaction_id: str, open_interactions: dict[str, int], cut: bool
) -> tuple[list[Message], list[Message]]:
    """The ended interactions' messages, each whole and in the order they began (where the window `cut`
    the session, one that does not start at a person's message is left out: its start is not there),
    and the step's own interaction's messages."""
    grouped = by_interaction(messages)
    own = grouped.pop(interaction_id, [])
    ended = [
        message
        for other, kept in grouped.items()
        if other not in open_interactions and not (cut and not is_persons(kept[0]))
        for message in kept
    ]
    return ended, own


def _own_is_cut(own: list[Message], first: Message, first_seq: int | None) -> bool:
    """Whether the window (whose oldest message is `first`) misses the start of the step's own
    interaction: known where it is in progress (the seq it started from), else guessed from its first
    message in the window."""
    if first_seq is not None:
        return first_seq < first.seq
    return bool(own) and not is_persons(own[0])


def read(
    store: BeamStore,
    session_id: str,
    interaction_id: str,
    runner: AgentRunner,
    *,
    whole_if_cut: bool = True,
) -> tuple[Session | None, list[Message]]:
    """The session and the conversation its runner is given for a step of `interaction_id`. Where the
    window cut the step's own interaction, it is read from its start where `whole_if_cut`, else started
    at its first person's message in the window (an invoke: its own input starts the conversation)."""
    last = window(runner)
    session, messages = store.get_session_with_messages(session_id, last=last)
    opened = session.open_interactions if session is not None else {}
    cut = last is not None and len(messages) >= last
    ended, own = arrange(messages, interaction_id, opened, cut)
    if not cut or not _own_is_cut(own, messages[0], opened.get(interaction_id)):
        return session, ended + own
    if whole_if_cut:
        start = opened.get(interaction_id)
        longer = store.list_messages(session_id, after_seq=start - 1 if start is not None else 0)
        own = [m for m in longer if m.interaction_id == interaction_id]
        return session, ended + own
    start = next((i for i, m in enumerate(own) if is_persons(m)), len(own))
    return session, ended + own[start:]

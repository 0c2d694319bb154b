"""The conversation a run's model is given (CONTRACT 3.11), in process on the in-memory store: the session's
other interactions that have ended, whole and in the order they began, then the run's own; an interaction
still waiting is left out. With the scripted model and as Bedrock's Converse messages (each toolResult
right after its toolUse), whichever of two waiting interactions is answered first."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from beam_store import InMemoryStore, Message, Session, TextPart, ToolCallPart, ToolResultPart
from riverbeam import NewMessage
from riverbeam.bedrock import converse_messages
from riverbeam.pipeline import history

from tests.support.waiting import ORDERS, REFS, answer, both_waiting, outline, pushing_beam, whole


def _converse_pairs_hold(turns: list[dict[str, Any]]) -> None:
    """Every toolUse is answered in the user turn right after it, and every toolResult answers the
    assistant turn right before it."""
    for before, turn in zip([None, *turns], turns, strict=False):
        results = [b["toolResult"]["toolUseId"] for b in turn["content"] if "toolResult" in b]
        if turn["role"] == "user":
            asked = [
                b["toolUse"]["toolUseId"] for b in (before or {"content": []})["content"] if "toolUse" in b
            ]
            assert results == asked, (results, asked)
    assert turns and turns[0]["role"] == "user"
    assert all(a["role"] != b["role"] for a, b in itertools.pairwise(turns))


@pytest.mark.parametrize("order", ORDERS)
def test_each_run_sees_the_ended_interactions_whole_then_its_own(order: str) -> None:
    beam, counter, model = pushing_beam(InMemoryStore())
    results = both_waiting(beam)
    # asking, each invoke saw its own message alone: the other interaction was still in progress
    assert [outline(c) for c in model.conversations] == [[f"human Push {ref}"] for ref in REFS]

    first, second = ORDERS[order]
    answer(beam, results[first])
    answer(beam, results[second])
    seen_first, seen_second = model.conversations[2:]
    assert outline(seen_first) == whole(REFS[first], ended=False)  # the other still waits: left out
    assert outline(seen_second) == whole(REFS[first], ended=True) + whole(REFS[second], ended=False)
    assert sorted(counter.pushed) == sorted(REFS)
    for conversation in model.conversations:
        _converse_pairs_hold(converse_messages(conversation))


def _message(seq: int, interaction: str, role: str, part: Any) -> Message:
    now = "2026-01-01T00:00:00.000000Z"
    return Message.model_validate(
        {
            "message_id": f"m{seq}",
            "session_id": "s",
            "interaction_id": interaction,
            "run_id": "r",
            "seq": seq,
            "role": role,
            "content": [part.model_dump()],
            "created_at": now,
            "updated_at": now,
        }
    )


def said(seq: int, interaction: str, text: str) -> Message:
    return _message(seq, interaction, "human", TextPart(text=text))


def call(seq: int, interaction: str, call_id: str) -> Message:
    return _message(seq, interaction, "ai", ToolCallPart(tool_call_id=call_id, name="git_push"))


def result(seq: int, interaction: str, call_id: str) -> Message:
    return _message(
        seq, interaction, "tool", ToolResultPart(tool_call_id=call_id, name="git_push", status="ok")
    )


class WindowStore(InMemoryStore):
    """A store holding one session's messages as given, and which interactions are in progress."""

    def __init__(self, messages: list[Message], opened: dict[str, int]) -> None:
        super().__init__()
        now = "2026-01-01T00:00:00.000000Z"
        self._sessions["s"] = Session(
            session_id="s",
            user_id="u1",
            last_seq=len(messages),
            open_interactions=opened,
            created_at=now,
            updated_at=now,
        )
        self._messages["s"] = messages


class Windowed:
    def __init__(self, last: int) -> None:
        self.history_window = last

    def run(self, input: Any, emit: Any) -> Any:
        raise NotImplementedError


# interaction A waits (its call at 2); B and C began and ended after it; A's answer came last (5, 6)
SESSION = [
    said(1, "A", "push a"),
    call(2, "A", "a"),
    said(3, "B", "hello"),
    said(4, "C", "push c"),
    call(5, "C", "c"),
    result(6, "C", "c"),
    result(7, "A", "a"),
]


def _seqs(messages: list[Message]) -> list[int]:
    return [m.seq for m in messages]


def test_a_window_that_holds_everything_orders_the_ended_first() -> None:
    store = WindowStore(SESSION, {"A": 1})
    _, conversation = history.read(store, "s", "A", Windowed(100))
    assert _seqs(conversation) == [3, 4, 5, 6, 1, 2, 7]
    _, other = history.read(store, "s", "B", Windowed(100))
    assert _seqs(other) == [4, 5, 6, 3]  # A is in progress: left out


def test_a_window_that_cut_the_runs_own_interaction_reads_it_from_its_start() -> None:
    store = WindowStore(SESSION, {"A": 1})
    _, conversation = history.read(store, "s", "A", Windowed(5))
    # C is whole in the window (from 4); B began at 3, in it; A read again from its first message
    assert _seqs(conversation) == [3, 4, 5, 6, 1, 2, 7]
    _, invoked = history.read(store, "s", "A", Windowed(5), whole_if_cut=False)
    assert _seqs(invoked) == [3, 4, 5, 6]  # an invoke: no person's message of A in the window


def test_an_ended_interaction_the_window_cut_is_left_out() -> None:
    store = WindowStore(SESSION, {})
    _, conversation = history.read(store, "s", "D", Windowed(3))
    assert _seqs(conversation) == []  # C's start (4) is not in the window 5..7, nor A's
    _, conversation = history.read(store, "s", "D", Windowed(4))
    assert _seqs(conversation) == [4, 5, 6]


def test_a_tool_result_without_its_call_is_dropped_for_converse() -> None:
    ended = [said(1, "A", "push a"), result(2, "A", "gone"), said(3, "B", "hi")]
    turns = converse_messages([NewMessage(role=m.role, type=m.type, content=m.content) for m in ended])
    assert turns == [{"role": "user", "content": [{"text": "push a"}, {"text": "hi"}]}]

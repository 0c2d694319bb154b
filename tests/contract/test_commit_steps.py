"""`commit`: a step writes all its records or none, numbers its messages, keeps values exact. Run on every
store (the `store` fixture of tests/conftest.py)."""

from __future__ import annotations

from typing import Any

import pytest
from beam_store import (
    BeamStore,
    RunNotRunning,
    StepWrite,
    TextPart,
    ToolCallPart,
    ToolOutcome,
    ToolResultPart,
)

from tests.support import steps
from tests.support.contract import interrupted_interaction, resolve_step, sid
from tests.support.stores import snapshot


def test_a_step_writes_every_record_and_numbers_messages(store: BeamStore) -> None:
    s = steps.session(sid(), "user@example.com")
    i = steps.interaction(s.session_id)
    step, r = steps.begin(s, i, texts=("one", "two"))
    written = store.commit(step)
    assert [m.seq for m in written] == [1, 2]
    stored = store.get_session(s.session_id)
    assert stored is not None and stored.user_id == "user@example.com" and stored.profile_id == "p1"
    assert stored.last_seq == 2
    inter = store.get_interaction(i.interaction_id)
    assert inter is not None and inter.active_run_id == r.run_id and inter.status == "in_progress"
    run = store.get_run(r.run_id)
    assert run is not None and run.status == "running"
    assert [(m.seq, m.content[0].text) for m in store.list_messages(s.session_id)] == [(1, "one"), (2, "two")]  # type: ignore[union-attr]

    store.commit(steps.close(s, i, r, texts=("three",)))
    closed = store.get_run(r.run_id)
    assert closed is not None and closed.status == "completed" and closed.ended_at is not None
    inter = store.get_interaction(i.interaction_id)
    assert inter is not None and inter.active_run_id is None and inter.status == "completed"
    session, messages = store.get_session_with_messages(s.session_id)
    assert session is not None and session.last_active_at is not None and session.last_seq == 3
    assert [m.seq for m in messages] == [1, 2, 3]
    assert [m.seq for m in store.list_messages(s.session_id, after_seq=1)] == [2, 3]
    assert [m.seq for m in store.list_messages(s.session_id, after_seq=1, limit=1)] == [2]
    assert store.list_messages(s.session_id, limit=0) == []
    assert store.list_messages(s.session_id, after_seq=10**12) == []
    assert [r.run_id for r in store.list_runs(i.interaction_id)] == [r.run_id]


def test_values_round_trip_exactly(store: BeamStore) -> None:
    s, i, _ = interrupted_interaction(store)
    args = {"ref": "x", "n": 3, "ratio": 0.1, "flag": True, "none": None, "nested": {"list": [1, 2.5, "z"]}}
    r = steps.run(i)
    a = steps.pending_action(i, r, args=args)
    step = steps.close(s, i, r)
    step.open_actions = [a]
    store.commit(
        StepWrite(
            session=s,
            session_op="update",
            interaction=i,
            interaction_op="acquire",
            run=r,
            run_op="create",
            resolve_actions=[],
        )
    )
    store.commit(step)
    got = store.get_action(a.action_id)
    assert got is not None and got.args == args
    assert isinstance(got.args["ratio"], float) and isinstance(got.args["n"], int)


# JSON values of every kind a body or a tool may carry, where a typed store could change them
EXACT_VALUES: dict[str, Any] = {
    "f": 1e20,
    "half": 1.5,
    "tenth": 0.1,
    "neg_zero": -0.0,
    "whole_float": 3.0,
    "tiny": 5e-324,
    "huge": 1.7976931348623157e308,
    "neg_exp": -1.25e-7,
    "int": 3,
    "zero": 0,
    "big": 12345678901234567890,
    "neg_big": -(2**70),
    "huge_int": 10**40 + 1,
    "true": True,
    "false": False,
    "none": None,
    "number_text": "1e+20",
    "empty_text": "",
    "empty_list": [],
    "empty_dict": {},
    "unicode": 'é ☃ 😀 \u0000 "quoted" \\',
    "": "empty key",
    "nested": {"list": [1, 2.5, 1e20, [True, 0, 0.0, False, 1, 1.0, {"x": -1.25e-7, "y": []}]], "d": {}},
}


def typed(value: Any) -> Any:
    """`value` with every scalar's type beside it (and floats exact): 1 != 1.0 != True, 0.0 != -0.0."""
    if isinstance(value, dict):
        return ("dict", sorted((k, typed(v)) for k, v in value.items()))
    if isinstance(value, list):
        return ("list", [typed(v) for v in value])
    if isinstance(value, float):
        return ("float", value.hex())
    return (type(value).__name__, value)


def test_json_values_round_trip_with_their_types(store: BeamStore) -> None:
    s, i, _ = interrupted_interaction(store)
    r = steps.run(i)
    store.commit(
        StepWrite(
            session=s, session_op="update", interaction=i, interaction_op="acquire", run=r, run_op="create"
        )
    )
    opened = steps.pending_action(i, r, args=EXACT_VALUES)
    call = ToolCallPart(tool_call_id=sid(), name="git_push", args=EXACT_VALUES)
    parts = [TextPart(text=""), call, TextPart(text="1e20")]
    step = steps.close(s, i, r, interrupted_with=[opened])
    step.messages = [step.messages[0]._replace(content=parts)]
    store.commit(step)

    step, r2 = resolve_step(store, s, i, opened)
    store.commit(step)
    resolved = store.get_action(opened.action_id)
    assert resolved is not None
    finish = steps.close(s, i, r2)
    outputs = [EXACT_VALUES, [1e20, -0.0, 2**64, []], 1e20, 12345678901234567890, True, ""]
    finish.messages = [
        finish.messages[0]._replace(
            role="tool",
            content=[
                ToolResultPart(tool_call_id=call.tool_call_id, name="git_push", status="ok", output=o)
                for o in outputs
            ],
        )
    ]
    finish.record_outcomes = [
        resolved.model_copy(update={"outcome": ToolOutcome(status="ok", output=EXACT_VALUES)})
    ]
    store.commit(finish)

    expected = typed(EXACT_VALUES)
    got = store.get_action(opened.action_id)
    assert got is not None and got.outcome is not None
    assert typed(got.args) == expected
    assert typed(got.outcome.output) == expected
    listed = {a.action_id: a for a in store.list_actions(i.interaction_id)}[opened.action_id]
    assert typed(listed.args) == expected and listed.outcome is not None
    assert typed(listed.outcome.output) == expected

    _, history = store.get_session_with_messages(s.session_id)
    for messages in (store.list_messages(s.session_id), history):
        by_run = {m.run_id: m for m in messages if m.role != "human"}
        asked, answered = by_run[r.run_id].content, by_run[r2.run_id].content
        assert [type(p) for p in asked] == [TextPart, ToolCallPart, TextPart]
        assert [asked[0].text, asked[2].text] == ["", "1e20"]  # type: ignore[union-attr]
        assert typed(asked[1].args) == expected  # type: ignore[union-attr]
        assert [typed(p.output) for p in answered] == [typed(o) for o in outputs]  # type: ignore[union-attr]


def test_closing_a_run_twice_is_refused(store: BeamStore) -> None:
    s = steps.session(sid())
    i = steps.interaction(s.session_id)
    step, r = steps.begin(s, i)
    store.commit(step)
    store.commit(steps.close(s, i, r))
    before = snapshot(store)
    with pytest.raises(RunNotRunning):
        store.commit(steps.close(s, i, r))
    assert snapshot(store) == before

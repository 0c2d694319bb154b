"""One suite, the same tests, on every store: InMemoryStore, DynamoBeamStore on moto, on a real server."""

from __future__ import annotations

import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

import pytest
from beam_store import (
    ActionConflict,
    ActionResponseRecord,
    BeamStore,
    Connection,
    InteractionBusy,
    InteractionInOtherSession,
    InteractionMissing,
    RunClaimed,
    RunNotRunning,
    SessionMissing,
    SessionOwnedByOther,
    StepWrite,
    TextPart,
    ToolCallPart,
    ToolOutcome,
    ToolResultPart,
    utc_now,
)

from tests.support import steps
from tests.support.stores import snapshot

# far above the milliseconds a race of 8 claims takes, loaded or not: only a hang reaches it
RACE_TIMEOUT_SECONDS = 600


def sid() -> str:
    return str(uuid.uuid4())


def interrupted_interaction(store: BeamStore, user: str = "u1"):  # type: ignore[no-untyped-def]
    s = steps.session(sid(), user)
    i = steps.interaction(s.session_id)
    step, r = steps.begin(s, i)
    store.commit(step)
    action = steps.pending_action(i, r, user)
    store.commit(steps.close(s, i, r, interrupted_with=[action]))
    return s, i, action


def resolve_step(store: BeamStore, s, i, action, status="resolved"):  # type: ignore[no-untyped-def]
    r = steps.run(i)
    resolved = action.model_copy(
        update={
            "status": status,
            "resolved_run_id": r.run_id,
            "response": ActionResponseRecord(
                status="submitted" if status == "resolved" else "cancelled",
                request_id=sid(),
                who=s.user_id,
                when=utc_now(),
            ),
        }
    )
    return StepWrite(
        session=s,
        session_op="update",
        interaction=i,
        interaction_op="acquire",
        run=r,
        run_op="create",
        messages=[steps.draft(i, r, "approved")],
        resolve_actions=[resolved],
    ), r


def test_getters_return_none_for_unknown_ids(store: BeamStore) -> None:
    assert store.get_session(sid()) is None
    assert store.get_interaction(sid()) is None
    assert store.get_run(sid()) is None
    assert store.get_action(sid()) is None
    assert store.list_messages(sid()) == []
    assert store.get_session_with_messages(sid()) == (None, [])


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
    step.messages = [replace(step.messages[0], content=parts)]
    store.commit(step)

    step, r2 = resolve_step(store, s, i, opened)
    store.commit(step)
    resolved = store.get_action(opened.action_id)
    assert resolved is not None
    finish = steps.close(s, i, r2)
    outputs = [EXACT_VALUES, [1e20, -0.0, 2**64, []], 1e20, 12345678901234567890, True, ""]
    finish.messages = [
        replace(
            finish.messages[0],
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


def test_a_new_session_of_another_owner_is_refused_and_nothing_written(store: BeamStore) -> None:
    s = steps.session(sid(), "alice")
    store.commit(steps.begin(s, steps.interaction(s.session_id))[0])
    before = snapshot(store)
    intruder = s.model_copy(update={"user_id": "mallory"})
    for create in (True, False):
        step, _ = steps.begin(intruder, steps.interaction(s.session_id), create_session=create)
        with pytest.raises(SessionOwnedByOther):
            store.commit(step)
    assert snapshot(store) == before


def test_updating_a_missing_session_is_refused(store: BeamStore) -> None:
    s = steps.session(sid())
    step, _ = steps.begin(s, steps.interaction(s.session_id), create_session=False)
    with pytest.raises(SessionMissing):
        store.commit(step)
    assert store.get_session(s.session_id) is None


def test_a_create_that_finds_the_session_created_meanwhile_goes_on(store: BeamStore) -> None:
    s = steps.session(sid())
    store.commit(steps.begin(s, steps.interaction(s.session_id))[0])
    written = store.commit(steps.begin(s, steps.interaction(s.session_id))[0])
    assert [m.seq for m in written] == [2]


def test_one_run_at_a_time_per_interaction(store: BeamStore) -> None:
    s = steps.session(sid())
    i = steps.interaction(s.session_id)
    store.commit(steps.begin(s, i)[0])
    before = snapshot(store)
    step, _ = steps.begin(s, i, create_session=False, create_interaction=False)
    with pytest.raises(InteractionBusy):
        store.commit(step)
    assert snapshot(store) == before


def test_acquiring_a_missing_or_foreign_interaction_is_refused(store: BeamStore) -> None:
    s = steps.session(sid())
    i = steps.interaction(s.session_id)
    store.commit(steps.begin(s, i)[0])
    other = steps.session(sid())
    store.commit(steps.begin(other, steps.interaction(other.session_id))[0])
    before = snapshot(store)
    with pytest.raises(InteractionMissing):
        store.commit(
            steps.begin(s, steps.interaction(s.session_id), create_session=False, create_interaction=False)[0]
        )
    with pytest.raises(InteractionInOtherSession):
        store.commit(
            steps.begin(
                other,
                steps.interaction(other.session_id, i.interaction_id),
                create_session=False,
                create_interaction=False,
            )[0]
        )
    assert snapshot(store) == before


def test_resolution_is_conditional_on_pending_interaction_and_session(store: BeamStore) -> None:
    s, i, action = interrupted_interaction(store)
    assert [a.action_id for a in store.list_actions(i.interaction_id)] == [action.action_id]
    step, r = resolve_step(store, s, i, action)
    store.commit(step)
    got = store.get_action(action.action_id)
    assert got is not None and got.status == "resolved" and got.resolved_run_id == r.run_id
    assert got.response is not None and got.response.who == "u1"

    before = snapshot(store)
    again, _ = resolve_step(store, s, i, action)
    with pytest.raises(ActionConflict) as refused:
        store.commit(again)
    assert refused.value.current is not None and refused.value.current.status == "resolved"
    assert snapshot(store) == before


def test_a_resolution_for_another_interaction_or_session_reports_the_stored_action(store: BeamStore) -> None:
    s, i, action = interrupted_interaction(store)
    s2, i2, _ = interrupted_interaction(store)
    before = snapshot(store)
    for wrong in (
        action.model_copy(update={"interaction_id": i2.interaction_id}),
        action.model_copy(update={"session_id": s2.session_id}),
    ):
        step, _ = resolve_step(store, s2, i2, wrong)
        with pytest.raises(ActionConflict) as refused:
            store.commit(step)
        assert refused.value.current is not None
        assert refused.value.current.interaction_id == i.interaction_id
        assert refused.value.current.session_id == s.session_id
    missing = action.model_copy(update={"action_id": sid()})
    step, _ = resolve_step(store, s, i, missing)
    with pytest.raises(ActionConflict) as refused:
        store.commit(step)
    assert refused.value.current is None
    assert snapshot(store) == before


def test_action_conflict_wins_over_a_busy_interaction(store: BeamStore) -> None:
    s, i, action = interrupted_interaction(store)
    step, _ = resolve_step(store, s, i, action)
    store.commit(step)  # the interaction is now held by the winner's run
    again, _ = resolve_step(store, s, i, action)
    with pytest.raises(ActionConflict):
        store.commit(again)


def test_outcome_is_recorded_once_by_the_resolving_run(store: BeamStore) -> None:
    s, i, action = interrupted_interaction(store)
    step, r = resolve_step(store, s, i, action)
    store.commit(step)
    stored = store.get_action(action.action_id)
    assert stored is not None
    with_outcome = stored.model_copy(update={"outcome": ToolOutcome(status="ok", output={"pushed": True})})
    finish = steps.close(s, i, r)
    finish.record_outcomes = [with_outcome]
    store.commit(finish)
    got = store.get_action(action.action_id)
    assert got is not None and got.outcome is not None and got.outcome.output == {"pushed": True}

    other_run = steps.run(i)
    store.commit(
        StepWrite(
            session=s,
            session_op="update",
            interaction=i,
            interaction_op="acquire",
            run=other_run,
            run_op="create",
        )
    )
    before = snapshot(store)
    second = steps.close(s, i, other_run)
    second.record_outcomes = [with_outcome]
    with pytest.raises(ActionConflict):
        store.commit(second)
    assert snapshot(store) == before


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


def test_reopening_a_pending_action_keeps_it(store: BeamStore) -> None:
    s, i, action = interrupted_interaction(store)
    original = store.get_action(action.action_id)
    r = steps.run(i)
    store.commit(
        StepWrite(
            session=s, session_op="update", interaction=i, interaction_op="acquire", run=r, run_op="create"
        )
    )
    store.commit(steps.close(s, i, r, interrupted_with=[action.model_copy(update={"run_id": r.run_id})]))
    assert store.get_action(action.action_id) == original


def test_actions_list_pending_first(store: BeamStore) -> None:
    s, i, first = interrupted_interaction(store)
    r = steps.run(i)
    store.commit(
        StepWrite(
            session=s, session_op="update", interaction=i, interaction_op="acquire", run=r, run_op="create"
        )
    )
    second = steps.pending_action(i, r)
    store.commit(steps.close(s, i, r, interrupted_with=[second]))
    assert [a.action_id for a in store.list_actions(i.interaction_id)] == [first.action_id, second.action_id]
    step, _ = resolve_step(store, s, i, first)
    store.commit(step)
    assert [a.action_id for a in store.list_actions(i.interaction_id)] == [second.action_id, first.action_id]


def test_a_running_run_is_claimed_once(store: BeamStore) -> None:
    s = steps.session(sid())
    i = steps.interaction(s.session_id)
    step, r = steps.begin(s, i)
    store.commit(step)
    claimed = store.claim_run(r.run_id, "worker-a", "2099-01-01T00:00:00.000000Z", utc_now())
    assert (claimed.claimed_by, claimed.lease_expires_at) == ("worker-a", "2099-01-01T00:00:00.000000Z")
    stored = store.get_run(r.run_id)
    assert stored is not None and stored.claimed_by == "worker-a" and stored.status == "running"
    with pytest.raises(RunClaimed) as refused:
        store.claim_run(r.run_id, "worker-b", "2099-01-01T00:00:00.000000Z", utc_now())
    assert refused.value.current.claimed_by == "worker-a"
    store.commit(steps.close(s, i, r))
    with pytest.raises(RunNotRunning):
        store.claim_run(r.run_id, "worker-c", "2099-01-01T00:00:00.000000Z", utc_now())
    with pytest.raises(RunNotRunning):
        store.claim_run(sid(), "worker-c", "2099-01-01T00:00:00.000000Z", utc_now())


def test_concurrent_claims_of_one_run_have_one_winner(store: BeamStore) -> None:
    s = steps.session(sid())
    i = steps.interaction(s.session_id)
    step, r = steps.begin(s, i)
    store.commit(step)
    barrier = threading.Barrier(8, timeout=RACE_TIMEOUT_SECONDS)

    def claim(k: int) -> str:
        barrier.wait()
        try:
            store.claim_run(r.run_id, f"worker-{k}", "2099-01-01T00:00:00.000000Z", utc_now())
            return "won"
        except RunClaimed:
            return "lost"

    with ThreadPoolExecutor(max_workers=8) as pool:
        outcomes = list(pool.map(claim, range(8), timeout=RACE_TIMEOUT_SECONDS))
    assert sorted(outcomes) == ["lost"] * 7 + ["won"]


def test_frames_are_kept_in_order_and_read_after_a_cursor(store: BeamStore) -> None:
    run_id = sid()
    later = int(time.time()) + 3600
    frames = [
        {"type": "text_delta", "run_id": run_id, "frame_seq": n, "text": f"é{n}", "x": 0.5} for n in range(30)
    ]
    store.append_frames(run_id, frames[:27], later)
    store.append_frames(run_id, frames[27:], later)
    store.append_frames(run_id, frames[5:6], later)  # a frame written twice is kept once
    assert store.list_frames(run_id) == frames
    assert [f["frame_seq"] for f in store.list_frames(run_id, after_seq=26)] == [27, 28, 29]
    assert [f["frame_seq"] for f in store.list_frames(run_id, after_seq=3, limit=2)] == [4, 5]
    assert store.list_frames(run_id, after_seq=29) == []
    assert store.list_frames(sid()) == []
    assert store.get_run(run_id) is None  # frames are not a run


def test_expired_frames_are_not_read(store: BeamStore) -> None:
    run_id = sid()
    store.append_frames(run_id, [{"type": "done", "frame_seq": 0}], int(time.time()) - 1)
    assert store.list_frames(run_id) == []


def test_a_reserved_session_belongs_to_its_first_reserver(store: BeamStore) -> None:
    first = steps.session(sid(), "alice")
    assert store.reserve_session(first).user_id == "alice"
    # a second reservation, by anyone, gets the stored session and changes nothing
    again = store.reserve_session(first.model_copy(update={"user_id": "mallory"}))
    assert again.user_id == "alice"
    stored = store.get_session(first.session_id)
    assert stored is not None and stored.user_id == "alice" and stored.last_seq == 0


def test_concurrent_reservations_of_one_session_have_one_owner(store: BeamStore) -> None:
    session_id = sid()
    users = [f"user{n}" for n in range(8)]
    with ThreadPoolExecutor(len(users)) as pool:
        owners = list(pool.map(lambda u: store.reserve_session(steps.session(session_id, u)).user_id, users))
    assert len(set(owners)) == 1 and owners[0] in users
    stored = store.get_session(session_id)
    assert stored is not None and stored.user_id == owners[0]


def test_a_reserved_session_takes_its_owners_first_step(store: BeamStore) -> None:
    s = steps.session(sid(), "alice")
    store.reserve_session(s)
    i = steps.interaction(s.session_id)
    step, _ = steps.begin(s, i)  # a create: the step finds the session reserved and goes on
    written = store.commit(step)
    assert [m.seq for m in written] == [1]
    with pytest.raises(SessionOwnedByOther):
        other, _ = steps.begin(steps.session(s.session_id, "mallory"), steps.interaction(s.session_id))
        store.commit(other)


def _connection(session_id: str, connection_id: str, expires_in: float = 3600) -> Connection:
    return Connection(
        connection_id=connection_id,
        session_id=session_id,
        user_id="alice",
        connected_at=utc_now(),
        expires_at=int(time.time() + expires_in),
    )


def test_connections_are_listed_per_session_and_forgotten(store: BeamStore) -> None:
    one, two = sid(), sid()
    third = _connection(two, "c3")
    for c in (_connection(one, "c1"), _connection(one, "c2"), third):
        store.put_connection(c)
    assert sorted(c.connection_id for c in store.list_connections(one)) == ["c1", "c2"]
    assert store.get_connection("c3") == third
    store.delete_connection("c1")
    store.delete_connection("c1")  # twice is no error
    assert [c.connection_id for c in store.list_connections(one)] == ["c2"]
    assert store.get_connection("c1") is None
    assert store.list_connections(sid()) == []


def test_expired_connections_are_not_listed(store: BeamStore) -> None:
    session_id = sid()
    store.put_connection(_connection(session_id, "old", expires_in=-1))
    store.put_connection(_connection(session_id, "live"))
    assert [c.connection_id for c in store.list_connections(session_id)] == ["live"]

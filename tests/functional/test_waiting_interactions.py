"""Two interactions of one session waiting for approval at once, answered in either order (CONTRACT 3.11),
on every store: each tool runs once, each run completes, each interaction ends completed, and the messages
of each interaction are whole (its tool's result right after its call)."""

from __future__ import annotations

import pytest
from beam_store import BeamStore, ToolCallPart, ToolResultPart
from riverbeam import StreamAck

from tests.support.waiting import ORDERS, REFS, answer, both_waiting, outline, pushing_beam, whole


@pytest.mark.parametrize("order", ORDERS)
def test_two_waiting_interactions_answered_in_either_order(store: BeamStore, order: str) -> None:
    beam, counter, model = pushing_beam(store)
    results = both_waiting(beam)
    session = store.get_session(results[0].session_id)
    assert session is not None
    assert set(session.open_interactions) == {r.interaction_id for r in results}

    for index in ORDERS[order]:
        ack = answer(beam, results[index])
        assert isinstance(ack, StreamAck)
        run = store.get_run(ack.run_id)
        assert run is not None and run.status == "completed" and run.error is None, run
        interaction = store.get_interaction(ack.interaction_id)
        assert interaction is not None and interaction.status == "completed"

    assert sorted(counter.pushed) == sorted(REFS)  # each tool ran, once
    for result, ref in zip(results, REFS, strict=True):
        action = store.get_action(str(result.action_required[0].action_id))
        assert action is not None and action.status == "resolved"
        assert action.outcome is not None and action.outcome.status == "ok"
        assert action.outcome.output == {"ref": ref}
    session = store.get_session(results[0].session_id)
    assert session is not None and session.open_interactions == {}

    # the stored messages of each interaction, read alone, are whole: its call, then its result
    messages = store.list_messages(results[0].session_id)
    for result, ref in zip(results, REFS, strict=True):
        own = [m for m in messages if m.interaction_id == result.interaction_id]
        assert outline(own) == whole(ref, ended=True)
    calls = [p.tool_call_id for m in messages for p in m.content if isinstance(p, ToolCallPart)]
    answered = [p.tool_call_id for m in messages for p in m.content if isinstance(p, ToolResultPart)]
    assert sorted(calls) == sorted(answered) and len(set(answered)) == len(REFS)
    first, second = ORDERS[order]
    assert outline(model.conversations[-1]) == whole(REFS[first], ended=True) + whole(
        REFS[second], ended=False
    )

"""Reads belong to the session's owner: anyone else is told the record does not exist (CONTRACT 3.8)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from beam_store import BeamStore
from riverbeam import AgentResult, BeamError, StreamAck

from tests.support.agents import author_beam, invoke_body, resume_body


def test_the_owner_reads_every_record_and_others_get_the_kinds_404(store: BeamStore) -> None:
    beam, _ = author_beam(store)
    result = beam.invoke(invoke_body(user="alice"))
    assert isinstance(result, AgentResult)
    ack = beam.resume(resume_body(result, user="alice"))
    assert isinstance(ack, StreamAck)
    sid, iid, rid = ack.session_id, ack.interaction_id, ack.run_id
    aid = result.action_required[0].action_id or ""

    assert beam.read_session(sid, user_id="alice").user_id == "alice"
    assert beam.read_run(rid.upper(), user_id="alice").run_id == rid  # any spelling of the UUID
    assert [m.seq for m in beam.read_messages(sid, user_id="alice", after_seq=2)] == [3, 4, 5]
    assert beam.read_interaction(iid, user_id="alice").status == "completed"
    assert beam.read_run(rid, user_id="alice").status == "completed"
    assert beam.read_action(aid, user_id="alice").status == "resolved"
    frames = beam.read_frames(rid, user_id="alice")
    assert frames[0]["type"] == "run_started" and frames[-1]["type"] == "done"

    reads: list[tuple[Callable[..., Any], str, str]] = [
        (beam.read_session, sid, "BEM-020"),
        (beam.read_messages, sid, "BEM-020"),
        (beam.read_interaction, iid, "BEM-022"),
        (beam.read_run, rid, "BEM-023"),
        (beam.read_frames, rid, "BEM-023"),
        (beam.read_action, aid, "BEM-027"),
    ]
    for read, record_id, code in reads:
        for reader, wanted in (
            ("mallory", record_id),
            ("alice", "00000000-0000-4000-8000-000000000000"),
            ("alice", "not-a-uuid"),
        ):
            with pytest.raises(BeamError) as raised:
                read(wanted, user_id=reader)
            assert (raised.value.code, raised.value.status) == (code, 404), (read.__name__, reader, wanted)

"""What the store contract suite (tests/contract, one file per protocol method or group) builds on."""

from __future__ import annotations

import uuid

from beam_store import (
    ActionResponseRecord,
    BeamStore,
    StepWrite,
    utc_now,
)

from tests.support import steps


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

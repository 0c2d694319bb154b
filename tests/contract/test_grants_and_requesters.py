"""What the store keeps for grants and groups: a grant's agent, an interaction's requester groups (set by
its create and by an acquire that names them, left by one that does not), a connection's groups. Run on
every store (the `store` fixture of tests/conftest.py)."""

from __future__ import annotations

import time

from beam_store import BeamStore, Connection, Grant, Interaction, Run, StepWrite, new_id, utc_now

from tests.support import steps
from tests.support.contract import sid


def _grant(agent_name: str | None) -> Grant:
    return Grant(
        grant_id=new_id(),
        tool="git_push",
        scope="tool",
        agent_name=agent_name,
        created_at=utc_now(),
        created_by="u1",
    )


def _closed_then_acquired(
    store: BeamStore, session_id: str, i: Interaction, run: Run
) -> tuple[StepWrite, Run]:
    """The interaction's run closed, and the next step that acquires it (not committed yet)."""
    session = store.get_session(session_id)
    assert session is not None
    store.commit(steps.close(session, i, run))
    session = store.get_session(session_id)
    assert session is not None
    return steps.begin(session, i, create_session=False, create_interaction=False)


def test_a_grant_keeps_its_agent_and_one_without_covers_nothing(store: BeamStore) -> None:
    s = steps.session(sid())
    i = steps.interaction(s.session_id)
    opening, run = steps.begin(s, i)
    store.commit(opening)
    granting, _ = _closed_then_acquired(store, s.session_id, i, run)
    mine, old = _grant("author"), _grant(None)
    granting.add_grants = [mine, old]
    store.commit(granting)
    kept = store.get_session(s.session_id)
    assert kept is not None and kept.grants == {mine.grant_id: mine, old.grant_id: old}
    assert kept.grants[mine.grant_id].covers("author", "git_push", "any")
    assert not kept.grants[mine.grant_id].covers("deployer", "git_push", "any")
    assert not kept.grants[old.grant_id].covers("author", "git_push", "any")


def test_an_interaction_keeps_its_requesters_groups_until_they_send_others(store: BeamStore) -> None:
    s = steps.session(sid())
    i = steps.interaction(s.session_id).model_copy(update={"requester_groups": ["interns"]})
    opening, run = steps.begin(s, i)
    store.commit(opening)
    assert store.get_interaction(i.interaction_id).requester_groups == ["interns"]  # type: ignore[union-attr]
    runs = [run]

    def again(groups: list[str] | None) -> list[str] | None:
        step, run = _closed_then_acquired(store, s.session_id, i, runs[-1])
        runs.append(run)
        step.interaction = i.model_copy(update={"requester_groups": groups})
        store.commit(step)
        found = store.get_interaction(i.interaction_id)
        assert found is not None
        return found.requester_groups

    assert again(["releasers", "ops"]) == ["releasers", "ops"]  # the requester's own later request
    assert again(None) == ["releasers", "ops"]  # an approver's resume names none: they stay
    assert again([]) == []


def test_a_connection_keeps_its_subscribers_groups(store: BeamStore) -> None:
    connection = Connection(
        connection_id=new_id(),
        session_id=sid(),
        user_id="alice",
        groups=["ops"],
        connected_at=utc_now(),
        expires_at=int(time.time() + 3600),
    )
    store.put_connection(connection)
    found = store.get_connection(connection.connection_id)
    assert found is not None and found.groups == ["ops"] and found == connection

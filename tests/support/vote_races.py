"""The race of approvers voting on one action at once (CONTRACT 11), with its promises asserted in every
trial; the suite runs a few trials (tests/realserver/test_vote_races.py), `bench/soak_votes.py` many."""

from __future__ import annotations

import time
from collections import Counter

from beam_store import BeamStore
from riverbeam import AgentResult, Approvals, BeamError, StreamAck, VoteAck

from tests.support.agents import PushCounter, author_beam, invoke_body, resume_body
from tests.support.concurrency import Figures, race


def votes_on_one_action(store: BeamStore, trials: int, voters: int = 8, required: int = 3) -> Figures:
    """`voters` approvers approve one pending action (a quorum of `required`) at once, `trials` times:
    exactly `required` - 1 votes are recorded without a run (VoteAck), exactly one vote resolves it
    (StreamAck) and its tool runs once, every later vote is refused BEM-066, and the action keeps exactly
    `required` votes, the last one its resolver's."""
    if not 1 <= required <= voters:
        raise ValueError("required must be within 1..voters")
    figures = Figures(f"votes ({voters} voters, quorum {required})")
    counter = PushCounter()
    beam, _ = author_beam(store, counter)
    users = tuple(f"approver-{k}" for k in range(voters))
    approvals = Approvals(users=users, required=required, self_approval=False)
    beam.register_agent("author", beam.agents()["author"], approvals={"git_push": approvals})
    started = time.monotonic()
    for trial in range(trials):
        result = beam.invoke(invoke_body())
        assert isinstance(result, AgentResult) and result.interrupted, f"trial {trial}: {result!r}"
        bodies = [resume_body(result, user=user) for user in users]
        outcomes = race(voters, lambda k, bodies=bodies: beam.resume(bodies[k]))  # type: ignore[misc]
        resolvers = [k for k, o in enumerate(outcomes) if isinstance(o, StreamAck)]
        recorded = [o for o in outcomes if isinstance(o, VoteAck)]
        codes = Counter(o.code for o in outcomes if isinstance(o, BeamError))
        assert len(resolvers) == 1, f"trial {trial}: {len(resolvers)} resolutions, {codes}"
        assert len(recorded) == required - 1, f"trial {trial}: {len(recorded)} votes without a run"
        assert codes == ({"BEM-066": voters - required} if voters > required else {}), (
            f"trial {trial}: {codes}"
        )
        assert len(counter.pushed) == trial + 1, (
            f"trial {trial}: the tool ran {len(counter.pushed) - trial} times"
        )
        action = store.get_action(result.action_required[0].action_id or "")
        assert action is not None and action.status == "resolved", f"trial {trial}: {action!r}"
        assert action.response is not None and action.response.who == users[resolvers[0]], f"trial {trial}"
        voted = [v.user_id for v in action.response.votes or []]
        assert len(voted) == len(set(voted)) == required and voted[-1] == users[resolvers[0]], (
            f"trial {trial}"
        )
        figures.trials += 1
        figures.winners[1] += 1
        figures.codes.update(codes)
    figures.tool_runs = len(counter.pushed)
    figures.seconds = time.monotonic() - started
    return figures

"""Approvers voting on one action at once, on a DynamoDB-compatible server on 127.0.0.1 and on the other
stores: of concurrent votes exactly one resolves the action and its tool runs once (CONTRACT 11). A few
trials here; `bench/soak_votes.py --trials N` runs as many as wanted and prints the figures.

The bound is far above a normal run (a trial takes seconds), so a loaded machine makes this slower, never
red."""

from __future__ import annotations

import pytest
from beam_store import BeamStore

from tests.support.vote_races import votes_on_one_action

TEST_TIMEOUT_SECONDS = 1200
TRIALS, VOTERS, REQUIRED = 3, 8, 3


@pytest.mark.realserver
@pytest.mark.timeout(TEST_TIMEOUT_SECONDS)
def test_eight_concurrent_votes_on_a_quorum_of_three_resolve_it_once(store: BeamStore) -> None:
    figures = votes_on_one_action(store, TRIALS, voters=VOTERS, required=REQUIRED)
    assert figures.trials == TRIALS and figures.winners == {1: TRIALS}
    assert figures.codes == {"BEM-066": (VOTERS - REQUIRED) * TRIALS}
    assert figures.tool_runs == TRIALS  # once per action

"""The sweep's settle racing a run, on the DynamoDB-compatible server with a stale interaction index: the
sweep expires an action, a run of its interaction then asks for a new one (before gsi1 shows it), and the
sweep's settle must not mark the interaction completed while that action is pending."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from beam_store import Action, DynamoBeamStore
from beam_store.protocol import ExpiryEvents
from riverbeam import AgentResult, AuthorOfflineModel, RiverBeam, ToolAgentRunner

from tests.support.agents import PushCounter, invoke_body, resume_body
from tests.support.clock import T0
from tests.support.stores import server_store

TTL_SECONDS = 60


class StaleIndexStore(DynamoBeamStore):
    """gsi1 as it was before the run that races the sweep: `list_actions` of a frozen interaction answers
    what it answered then (an index that has not caught up); `after_expiry` runs once, right after the
    sweep's expiry of the action it names, before the sweep settles the interaction."""

    def __init__(self, client: Any, table_name: str) -> None:
        super().__init__(client, table_name)
        self.frozen: dict[str, list[Action]] = {}
        self.after_expiry: dict[str, Any] = {}

    def freeze(self, interaction_id: str) -> None:
        self.frozen[interaction_id] = super().list_actions(interaction_id)

    def list_actions(self, interaction_id: str) -> list[Action]:
        if interaction_id in self.frozen:
            return [a.model_copy(deep=True) for a in self.frozen[interaction_id]]
        return super().list_actions(interaction_id)

    def expire_action(
        self, action_id: str, now: str, *, outbox: ExpiryEvents | None = None
    ) -> tuple[Action | None, bool]:
        answer = super().expire_action(action_id, now, outbox=outbox)
        meanwhile = self.after_expiry.pop(action_id, None)
        if meanwhile is not None:
            meanwhile()
        return answer


def _beam(store: DynamoBeamStore, moment: Any, counter: PushCounter) -> RiverBeam:
    beam = RiverBeam(store, clock=lambda: moment)
    runner = ToolAgentRunner(model=AuthorOfflineModel(), tools=[counter.tool()])
    beam.register_agent("author", runner, action_ttl_seconds=TTL_SECONDS)
    return beam


@pytest.mark.realserver
@pytest.mark.timeout(600)
def test_the_sweep_never_completes_an_interaction_a_run_left_waiting_meanwhile(dynamodb_url: str) -> None:
    base = server_store(dynamodb_url)
    store = StaleIndexStore(base.client, base.table_name)
    counter = PushCounter()
    early = _beam(store, T0, counter)
    late = _beam(store, T0 + timedelta(days=1), counter)

    first = early.invoke(invoke_body(text="Push docs/update"))
    assert isinstance(first, AgentResult) and first.interrupted
    interaction_id = str(first.interaction_id)
    expiring = str(first.action_required[0].action_id)
    store.freeze(interaction_id)  # from now on gsi1 shows the interaction as it is now: one action

    asked: list[AgentResult] = []

    def run_meanwhile() -> None:
        """A person writes again in the interaction: its run tells the agent of the expiry and asks anew."""
        again = late.invoke(
            invoke_body(session_id=first.session_id, interaction_id=interaction_id, text="Push main")
        )
        assert isinstance(again, AgentResult)
        asked.append(again)

    store.after_expiry[expiring] = run_meanwhile
    swept = late.sweep_expired()

    assert [a.action_id for a in swept] == [expiring]
    (again,) = asked
    assert again.interrupted and [a.args for a in again.action_required] == [{"ref": "main"}]
    waiting = store.get_action(str(again.action_required[0].action_id))
    assert waiting is not None and waiting.status == "pending"
    interaction = store.get_interaction(interaction_id)
    assert interaction is not None and interaction.status == "in_progress"  # it waits on `main`
    session = store.get_session(first.session_id)
    assert session is not None and interaction_id in session.open_interactions

    # the new action can still be approved, and its run completes the interaction
    ack = late.resume(resume_body(again))
    run = store.get_run(ack.run_id)
    assert run is not None and run.status == "completed"
    interaction = store.get_interaction(interaction_id)
    assert interaction is not None and interaction.status == "completed"
    assert counter.pushed == ["main"]

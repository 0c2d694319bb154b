"""A clock that moves only when a test moves it: expiry tested without sleeps; a beam that uses it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from beam_store import BeamStore
from riverbeam import AgentResult, RiverBeam

from tests.support.agents import PushCounter, author_beam, invoke_body

T0 = datetime(2026, 12, 3, 9, 0, 0, tzinfo=UTC)


class Clock:
    def __init__(self, moment: datetime = T0) -> None:
        self.moment = moment

    def __call__(self) -> datetime:
        return self.moment

    def advance(self, **delta: float) -> None:
        self.moment += timedelta(**delta)


def iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def sharing_author(
    store: BeamStore, clocks: Sequence[Callable[[], datetime]], **register: float
) -> tuple[list[RiverBeam], PushCounter]:
    """Beams on one store, each telling the time by its clock, sharing tests/support/agents' author (its
    pushes counted once for them all)."""
    beam, counter = author_beam(store)
    runner = beam._setup.agents["author"]
    beams = [RiverBeam(store, clock=clock) for clock in clocks]
    for each in beams:
        each.register_agent("author", runner, **register)  # type: ignore[arg-type]
    return beams, counter


def clocked(store: BeamStore, clock: Clock, **register: float) -> tuple[RiverBeam, PushCounter]:
    """tests/support/agents' author (its pushes counted) on a beam that tells the time by `clock`."""
    (beam,), counter = sharing_author(store, [clock], **register)
    return beam, counter


def asked(beam: RiverBeam, **extra: Any) -> AgentResult:
    """An invoke whose agent asks for approval."""
    result = beam.invoke(invoke_body(**extra))
    assert isinstance(result, AgentResult) and result.interrupted
    return result

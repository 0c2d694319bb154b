"""What the framework desks of the functional tests (tests/support/pydantic_agents.py, strands_agents.py,
openai_desk.py) drive alike: invoke on their RiverBeam, answer a pause as a person would, and read the
frames and actions it left; a new RiverBeam for a resume. Each desk sets `store`, `clock`, `policy`,
`schema`, `frames` and `beam` (`self._beam()`), and makes its runner."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, Self

from beam_store import BeamStore
from beam_store.records import Message
from riverbeam import AgentResult, AgentRunner, BeamError, Policy, RiverBeam
from riverbeam.models import DoneFrame, ErrorFrame

from tests.support.agents import invoke_body, resume_body

# the calls and the policy every framework's tests use
PAY_BOB = ("pay", {"to": "bob", "amount": 5})
PAY_CAROL = ("pay", {"to": "carol", "amount": 7})
POLICY = """\
@id("small-payments") permit (principal, action == Action::"run_unattended", resource == Tool::"pay")
  when { context.args has amount && context.args.amount < 10 };
@id("no-mallory") forbid (principal, action, resource == Tool::"look_up")
  when { context.args has name && context.args.name == "mallory" };
"""


class DeskDriving:
    store: BeamStore
    beam: RiverBeam
    clock: Callable[[], datetime] | None
    policy: str | None
    schema: str
    frames: list[dict[str, Any]]

    def runner(self) -> AgentRunner:
        raise NotImplementedError

    def _beam(self) -> RiverBeam:
        beam = RiverBeam(self.store, clock=self.clock) if self.clock else RiverBeam(self.store)
        policy = Policy(self.policy) if self.policy is not None else None
        beam.register_agent("author", self.runner(), policy=policy)
        return beam

    def reopened(self, schema: str | None = None) -> Self:
        self.schema = schema or self.schema
        self.beam = self._beam()
        return self

    def invoke(self, text: str = "Pay bob", session_id: str | None = None, **more: Any) -> AgentResult:
        result = self.beam.invoke(
            invoke_body(session_id=session_id, text=text, **more),
            on_frame=lambda f: self.frames.append(f.model_dump()),
        )
        assert isinstance(result, AgentResult)
        return result

    def answer(
        self, paused: AgentResult, index: int = 0, status: str = "submitted", **more: Any
    ) -> AgentResult:
        """A person's answer to the `index`th action `paused` asks for (`more`: `edited_args`, a
        rejection's `reason`)."""
        found = paused.model_dump(mode="json")
        found["action_required"] = found["action_required"][index:]
        frames: list[Any] = []
        self.beam.resume(resume_body(found, status=status, **more), on_frame=frames.append)
        self.frames += [f.model_dump() for f in frames]
        for error in (f for f in frames if isinstance(f, ErrorFrame)):  # the run failed: it says why
            raise BeamError(error.code, error.message)
        [done] = [f for f in frames if isinstance(f, DoneFrame)]
        return done.result

    def frames_of(self, kind: str) -> list[dict[str, Any]]:
        return [f for f in self.frames if f["type"] == kind]

    def actions(self, result: AgentResult) -> dict[str, Any]:
        assert result.interaction_id is not None
        return {a.tool: a for a in self.store.list_actions(result.interaction_id)}


def message(seq: int, role: str, *content: Any, type: str = "message") -> Message:
    """A stored message of session "s" (for the tests of a runner's history conversion)."""
    return Message(
        message_id=f"m{seq}",
        session_id="s",
        interaction_id="i",
        run_id="r",
        seq=seq,
        role=role,
        type=type,
        content=list(content),
        created_at="2026-12-08T00:00:00Z",
        updated_at="2026-12-08T00:00:00Z",
    )

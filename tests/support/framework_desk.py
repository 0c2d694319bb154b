"""What the framework desks of the functional tests (tests/support/pydantic_agents.py, strands_agents.py,
openai_desk.py) drive alike: invoke on their RiverBeam, answer a pause as a person would, and read the
frames and actions it left. Each desk sets `store`, `beam` and `frames`."""

from __future__ import annotations

from typing import Any

from beam_store import BeamStore
from riverbeam import AgentResult, BeamError, RiverBeam
from riverbeam.models import DoneFrame, ErrorFrame

from tests.support.agents import invoke_body, resume_body


class DeskDriving:
    store: BeamStore
    beam: RiverBeam
    frames: list[dict[str, Any]]

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

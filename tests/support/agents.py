"""A beam with an `author` agent whose git_push is counted rather than run."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from beam_store import BeamStore
from riverbeam import ModelTurn, NewMessage, RiverBeam, ScriptedModel, ToolAgentRunner, ToolCall, tool
from riverbeam.models import FrameHeader


@dataclass
class PushCounter:
    pushed: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def tool(self) -> Any:
        @tool(confirm_required=True)
        def git_push(ref: str) -> dict[str, str]:
            """Push a branch."""
            with self.lock:
                self.pushed.append(ref)
            return {"ref": ref}

        return git_push


def answer_refusal(conversation: Sequence[NewMessage]) -> ModelTurn:
    last = conversation[-1]
    status = getattr(last.content[0], "status", None)
    return ModelTurn(text="OK, I will not push." if status == "refused" else f"Done: {status}.")


def author_beam(store: BeamStore, counter: PushCounter | None = None) -> tuple[RiverBeam, PushCounter]:
    counter = counter or PushCounter()
    # turn N answers the conversation's Nth ai turn: the pair repeats for later interactions of a session
    model = ScriptedModel(
        [
            ModelTurn(
                text="I will push.", tool_calls=[ToolCall(name="git_push", args={"ref": "docs/update"})]
            ),
            answer_refusal,
        ]
        * 5
    )
    beam = RiverBeam(store)
    beam.register_agent("author", ToolAgentRunner(model=model, tools=[counter.tool()]))
    return beam, counter


def invoke_body(
    session_id: str | None = None, user: str = "u1", text: str = "Push docs/update", **extra: Any
) -> dict[str, Any]:
    return {
        "agent_name": "author",
        "session_id": session_id or str(uuid.uuid4()),
        "content": [{"type": "text", "text": text}],
        "auth_context": {"user_id": user},
        **extra,
    }


def resume_body(result: Any, status: str = "submitted", user: str = "u1", **envelope: Any) -> dict[str, Any]:
    """A resume answering the first action of `result` (an AgentResult, or its JSON)."""
    found = result if isinstance(result, dict) else result.model_dump(mode="json")
    action = found["action_required"][0]
    return {
        "agent_name": "author",
        "session_id": found["session_id"],
        "interaction_id": found["interaction_id"],
        "actions": [
            {
                "action_id": action["action_id"],
                "kind": "confirmation",
                "request_id": str(uuid.uuid4()),
                "status": status,
                "payload": {"tool": action["tool"], "args": action["args"]},
                **envelope,
            }
        ],
        "auth_context": {"user_id": user},
    }


class FrameLog(list[FrameHeader]):
    def __call__(self, frame: FrameHeader) -> None:
        self.append(frame)

    def types(self) -> list[str]:
        return [f.type for f in self]

"""The interface between the pipeline and an agent."""

# no `from __future__ import annotations`: pydantic would compile and evaluate every field's annotation
# string as each model class is made

import uuid
from collections.abc import Callable
from typing import Any, Literal, Protocol, runtime_checkable

from beam_store.records import ContentPart, Message
from pydantic import BaseModel, ConfigDict, Field

from ..models import AgentResult, FrameHeader
from ..policy.gate import CallGate

Emit = Callable[[FrameHeader | dict[str, Any]], None]


def agent_id_for(name: str) -> str:
    """The same agent name maps to the same id on every machine."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "riverbeam:agent:" + name))


class ResolvedAction(BaseModel):
    """A response the pipeline resolved for this run, with the tool stored on the action and the args to
    run it with: the stored ones, or those the approver edited (`edited`; `requested_args` are the
    stored ones then)."""

    model_config = ConfigDict(defer_build=True)

    action_id: str
    status: Literal["submitted", "cancelled"]
    tool: str
    args: dict[str, Any] = Field(default_factory=dict)
    reason: str | None = None
    edited: bool = False
    requested_args: dict[str, Any] | None = None
    # who answered (the response's `who`) and the hash of the args the tool runs with: for its span
    decided_by: str | None = None
    args_sha256: str | None = None


# the session's last messages a runner is given (from a person's message): a runner or its model may say
# otherwise with a `history_window` attribute (None: the whole history)
DEFAULT_HISTORY_WINDOW = 100


class AgentInput(BaseModel):
    # built by the first step run here, not at import
    model_config = ConfigDict(defer_build=True, arbitrary_types_allowed=True)

    agent_name: str
    session_id: str
    interaction_id: str
    run_id: str
    user_id: str
    profile_id: str | None = None
    content: list[ContentPart] = Field(default_factory=list)
    # the session's latest stored messages (from a person's message; the runner's history_window), this
    # step's input and action results included
    history: list[Message] = Field(default_factory=list)
    actions: list[ResolvedAction] = Field(default_factory=list)
    # decides each tool call the agent proposes (CONTRACT 10): allow, ask or deny; None: the tool's own
    # confirm_required asks, the rest runs (a runner given no gate by its caller)
    gate: CallGate | None = None
    # what the interaction's last run returned as AgentResult.state, for a runner that `keeps_state`
    state: Any = None


class RunnerFailure(Exception):
    """A runner failed after doing work that must be kept: `partial` holds its messages and tool outcomes."""

    def __init__(self, cause: BaseException, partial: AgentResult) -> None:
        super().__init__(str(cause))
        self.cause = cause
        self.partial = partial


@runtime_checkable
class AgentRunner(Protocol):
    """`run` is all a runner needs. It may also have `validate_args(tool, args)`, the (field, problem)
    pairs of args that do not fit a tool's schema, `editable(tool)`, whether a person may edit a
    tool's args when approving it, and `grantable(tool)`, whether an approval may grant it for the rest
    of the session; a runner without them takes any JSON object, for any tool, and any grant. A runner
    with `disabled_error()` cannot run now: every request naming its agent is refused with that BeamError
    before anything is stored (agent.mcp_servers.DisabledAgent). A runner with `keeps_state = True` is
    given the interaction's state (AgentInput.state) and `fingerprint()`, a JSON object naming its agent
    and its tools' input schemas, kept with the state: a resume that finds another fails (pipeline/
    states.py)."""

    def run(self, input: AgentInput, emit: Emit) -> AgentResult: ...

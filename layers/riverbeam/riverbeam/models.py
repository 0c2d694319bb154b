"""Every request, result and frame on the wire (CONTRACT sections 2 and 4)."""

# no `from __future__ import annotations`: pydantic would compile and evaluate every field's annotation
# string as each model class is made (a third of the module's import time)

import uuid
from typing import Annotated, Any, Literal, Self

from beam_store.records import (
    Approvals,
    ContentPart,
    ErrorInfo,
    MessageRole,
    MessageType,
    TextPart,
    TokenUsage,
    ToolOutcome,
    Vote,
)
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, PlainSerializer, model_validator

from .policy.decision import DecidedCall

UuidStr = Annotated[uuid.UUID, PlainSerializer(str, return_type=str)]


class WireModel(BaseModel):
    """Built (its validator and serializer) when first used, not at import: a handler pays only for the
    models it uses."""

    model_config = ConfigDict(defer_build=True)


class RequestModel(WireModel):
    """Requests refuse unknown fields, so a misspelt field is an error rather than ignored."""

    model_config = ConfigDict(extra="forbid")


# a caller's groups: as many and as long as a JWT's groups claim would reasonably carry
MAX_GROUPS, MAX_GROUP_CHARS = 100, 256
GroupName = Annotated[str, Field(min_length=1, max_length=MAX_GROUP_CHARS)]


class AuthContext(RequestModel):
    user_id: str = Field(min_length=1)
    profile_id: str | None = None
    # the caller's groups (the principal's parents in an approval policy, CONTRACT 10)
    groups: list[GroupName] = Field(default_factory=list, max_length=MAX_GROUPS)


# a message is one item, and DynamoDB items stay under 400 KB; larger input is refused, never truncated
MAX_CONTENT_BYTES = 256 * 1024


def _fits(content: list[TextPart]) -> list[TextPart]:
    if sum(len(part.text.encode()) for part in content) > MAX_CONTENT_BYTES:
        raise ValueError(f"the text is larger than {MAX_CONTENT_BYTES} bytes")
    return content


InputContent = Annotated[list[TextPart], AfterValidator(_fits)]


class InvokeRequest(RequestModel):
    agent_name: str = Field(min_length=1)
    session_id: UuidStr
    interaction_id: UuidStr | None = None
    content: InputContent = Field(min_length=1)
    stream: bool = False
    auth_context: AuthContext
    # the caller's id of this request: sent again with it, it gets the first answer (pipeline/retries.py)
    request_id: UuidStr | None = None


class ActionPayload(RequestModel):
    tool: str
    args: dict[str, Any] = Field(default_factory=dict)


class ActionResponseEnvelope(RequestModel):
    # checked as a UUID before the body is validated: a malformed id is BEM-063, not BEM-001
    action_id: str
    kind: Literal["confirmation"] = "confirmation"
    request_id: UuidStr = Field(default_factory=uuid.uuid4)
    status: Literal["submitted", "cancelled"]
    payload: ActionPayload | None = None
    reason: str | None = None
    # the hash of the args the approver saw (a mismatch is BEM-067), and args to approve instead
    args_sha256: str | None = None
    edited_args: dict[str, Any] | None = None
    # approve and run the session's later calls of this tool unasked: any args, or exactly these
    grant: Literal["tool", "args"] | None = None

    @model_validator(mode="after")
    def _edits_approve(self) -> Self:
        if self.edited_args is not None and self.status != "submitted":
            raise ValueError("edited_args go with status submitted only")
        if self.grant is not None and self.status != "submitted":
            raise ValueError("grant goes with status submitted only")
        return self


class ResumeHead(WireModel):
    """What the resume checks need before the rest of the body is validated."""

    agent_name: str = Field(min_length=1)
    session_id: UuidStr
    interaction_id: UuidStr
    auth_context: AuthContext


# one resume is one transaction: its actions, their messages and the run stay under DynamoDB's 100 items
MAX_ACTIONS_PER_RESUME = 25


class ResumeRequest(RequestModel):
    agent_name: str = Field(min_length=1)
    session_id: UuidStr
    interaction_id: UuidStr
    content: InputContent = Field(default_factory=list)
    actions: list[ActionResponseEnvelope] = Field(min_length=1, max_length=MAX_ACTIONS_PER_RESUME)
    stream: bool = True
    auth_context: AuthContext


class ActionRequest(WireModel):
    """What an agent asks approval for; the pipeline assigns `action_id` when the runner leaves it out."""

    action_id: str | None = None
    kind: Literal["confirmation"] = "confirmation"
    tool: str
    args: dict[str, Any] = Field(default_factory=dict)
    # set by the pipeline: the hash of `args` (CONTRACT 1), and until when a person may answer
    args_sha256: str | None = None
    expires_at: str | None = None
    # how long the runner's tool gives a person to answer (None: the agent's time, by default 24 h)
    expires_after: float | None = Field(default=None, exclude=True)
    # set by the pipeline: who may answer it, where its tool names approvers (kept on the Action)
    approvals: Approvals | None = Field(default=None, exclude=True)
    # set by the pipeline: whether approving it may also grant its tool for the session ("always allow")
    grantable: bool | None = None


class NewMessage(WireModel):
    """A message a runner produced, stored by the pipeline in order, with its seq."""

    role: MessageRole
    content: list[ContentPart]
    type: MessageType = "message"


class AgentResult(WireModel):
    """What a runner returns, and (with the ids filled in) the Result of an invoke or a `done` frame.

    `messages` and `tool_outcomes` travel from runner to pipeline only and are not part of the Result JSON.
    Without `messages`, the pipeline stores `content` as one `ai` message.
    """

    agent_name: str | None = None
    session_id: str | None = None
    interaction_id: str | None = None
    run_id: str | None = None
    interrupted: bool = False
    action_required: list[ActionRequest] = Field(default_factory=list)
    content: list[ContentPart] = Field(default_factory=list)
    messages: list[NewMessage] = Field(default_factory=list, exclude=True)
    tool_outcomes: dict[str, ToolOutcome] = Field(default_factory=dict, exclude=True)
    usage: TokenUsage | None = Field(default=None, exclude=True)
    # the calls decided without asking that are kept as Actions (denied, or allowed by a policy or grant)
    decided: list[DecidedCall] = Field(default_factory=list, exclude=True)
    # approved calls denied as they were about to run (a forbid that held then: CONTRACT 17); never ran
    denied_when_run: list[DecidedCall] = Field(default_factory=list, exclude=True)
    # a runner's paused state (any JSON value), kept with the interaction for its next run (CONTRACT 15)
    state: Any = Field(default=None, exclude=True)

    def text(self) -> str:
        return "".join(p.text for p in self.content if isinstance(p, TextPart))


class StreamAck(WireModel):
    session_id: str
    interaction_id: str
    run_id: str
    stream: Literal["websocket"] = "websocket"


class PendingVotes(WireModel):
    """An action that still waits for approvals: the votes it has, and how many approvals it needs."""

    action_id: str
    votes: list[Vote]
    required: int


class VoteAck(WireModel):
    """The answer to a resume whose answers only added votes (CONTRACT 11): no run started."""

    session_id: str
    interaction_id: str
    pending: list[PendingVotes]


class RunJob(RequestModel):
    """A step accepted (checked, its opening write done) and waiting for a worker to run the agent."""

    kind: Literal["invoke", "resume"]
    agent_name: str
    session_id: str
    interaction_id: str
    run_id: str
    content: list[TextPart] = Field(default_factory=list)
    action_ids: list[str] = Field(default_factory=list)
    # the caller's groups, for the agent's approval policy
    groups: list[str] = Field(default_factory=list)

    def ack(self) -> StreamAck:
        return StreamAck(session_id=self.session_id, interaction_id=self.interaction_id, run_id=self.run_id)


class FrameHeader(WireModel):
    session_id: str = ""
    interaction_id: str = ""
    run_id: str = ""
    frame_seq: int = 0


class RunStartedFrame(FrameHeader):
    type: Literal["run_started"] = "run_started"
    agent_name: str
    kind: Literal["invoke", "resume"]


class TextDeltaFrame(FrameHeader):
    type: Literal["text_delta"] = "text_delta"
    text: str


class ToolCallFrame(FrameHeader):
    type: Literal["tool_call"] = "tool_call"
    tool_call_id: str
    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    # whether it waits for a person's approval (the decision `ask`)
    confirm_required: bool = False
    # how it was decided (allow, ask, deny) and, where nobody is asked, by what (a policy, a grant)
    decision: Literal["allow", "ask", "deny"] | None = None
    decided_by: dict[str, Any] | None = None


class ToolResultFrame(FrameHeader):
    type: Literal["tool_result"] = "tool_result"
    tool_call_id: str
    name: str
    status: Literal["ok", "error", "refused"]
    output: Any = None
    error: ErrorInfo | None = None


class ErrorFrame(FrameHeader):
    type: Literal["error"] = "error"
    code: str
    message: str


class DoneFrame(FrameHeader):
    type: Literal["done"] = "done"
    result: AgentResult


Frame = Annotated[
    RunStartedFrame | TextDeltaFrame | ToolCallFrame | ToolResultFrame | ErrorFrame | DoneFrame,
    Field(discriminator="type"),
]

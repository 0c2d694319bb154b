"""The execution records (Session > Interaction > Run > Message, Action) as stored and as served."""

# no `from __future__ import annotations`: pydantic would compile and evaluate every field's annotation
# string as each model class is made
import hashlib
import json
import uuid
from datetime import UTC, datetime
from typing import Annotated, Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

InteractionStatus = Literal["in_progress", "completed", "failed"]
RunStatus = Literal["running", "completed", "failed", "interrupted"]
ActionStatus = Literal["pending", "resolved", "cancelled", "expired", "denied"]
MessageRole = Literal["human", "ai", "tool"]
MessageType = Literal["message", "action_result"]
ResponseStatus = Literal["submitted", "cancelled"]
RequestStatus = Literal["in_progress", "completed"]
# users and groups listed as a tool's approvers, at most (each is an inbox entry of its pending actions)
MAX_APPROVERS = 20


def utc_now() -> str:
    """ISO-8601 UTC with microseconds, so timestamps sort as strings."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def new_id() -> str:
    return str(uuid.uuid4())


def canonical_json(args: Any) -> str:
    """`args` as canonical JSON: keys sorted, no spaces, no ASCII escaping (CONTRACT 1)."""
    return json.dumps(args, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical_args(args: Any) -> Any:
    """`args` as their canonical JSON reads back: what is hashed, decided and run (tuples as lists)."""
    loaded: Any = json.loads(canonical_json(args))
    return loaded


def args_sha256(args: Any) -> str:
    """The SHA-256 (hex) of `args` as canonical JSON: keys sorted, no spaces, UTF-8 (CONTRACT 1)."""
    return hashlib.sha256(canonical_json(args).encode()).hexdigest()


class WireModel(BaseModel):
    """A model that appears in JSON: unknown fields of stored items are ignored."""

    model_config = ConfigDict(extra="ignore", defer_build=True)


class ErrorInfo(WireModel):
    code: str
    message: str


class TextPart(WireModel):
    type: Literal["text"] = "text"
    text: str


class ToolCallPart(WireModel):
    type: Literal["tool_call"] = "tool_call"
    tool_call_id: str
    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    # the model provider's own id of the call (Bedrock's toolUseId), sent back with its result
    model_call_id: str | None = None


class ToolResultPart(WireModel):
    type: Literal["tool_result"] = "tool_result"
    tool_call_id: str
    name: str
    status: Literal["ok", "error", "refused"]
    output: Any = None
    error: ErrorInfo | None = None
    # the args the tool ran with where the person who approved it edited them (the model is told)
    edited_args: dict[str, Any] | None = None


class ActionResponsePart(WireModel):
    type: Literal["action_response"] = "action_response"
    action_id: str
    status: ResponseStatus
    reason: str | None = None
    edited_args: dict[str, Any] | None = None


ContentPart = Annotated[
    TextPart | ToolCallPart | ToolResultPart | ActionResponsePart, Field(discriminator="type")
]


GrantScope = Literal["tool", "args"]


class Grant(WireModel):
    """A standing grant ("always allow", CONTRACT 10): the session's later calls of `agent_name`'s `tool`
    (any args for scope `tool`, args hashing to `args_sha256` for scope `args`) run without asking."""

    grant_id: str
    tool: str
    scope: GrantScope
    args_sha256: str | None = None
    # the agent whose tool it grants; None: a grant kept before grants were per agent, which covers
    # nothing (its agent is not known, and another agent's tool of that name may need more)
    agent_name: str | None = None
    created_at: str
    created_by: str

    def covers(self, agent_name: str, tool: str, args_hash: str) -> bool:
        return (
            self.agent_name is not None
            and agent_name == self.agent_name
            and tool == self.tool
            and (self.scope == "tool" or args_hash == self.args_sha256)
        )


class Session(WireModel):
    session_id: str
    user_id: str
    profile_id: str | None = None
    last_seq: int = 0
    last_active_at: str | None = None
    # the session's interactions in progress (running or waiting for approval), each with the seq its
    # messages start from: left out of the conversation other interactions' models see (CONTRACT 3.11)
    open_interactions: dict[str, int] = Field(default_factory=dict)
    # the session's standing grants by grant_id (its owner's: listed and revoked by them alone)
    grants: dict[str, Grant] = Field(default_factory=dict)
    created_at: str
    updated_at: str


class Interaction(WireModel):
    interaction_id: str
    session_id: str
    agent_name: str
    status: InteractionStatus
    active_run_id: str | None = None
    # the groups of its requester (the session's owner) as their last request to it gave them: its
    # runs decide with them, whoever resumes (an approver's groups never); None: kept before them
    requester_groups: list[str] | None = None
    created_at: str
    updated_at: str


class TokenUsage(WireModel):
    """Tokens a model call used, as the provider counts them."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def __add__(self, other: Self) -> Self:
        return type(self)(
            **{name: getattr(self, name) + getattr(other, name) for name in TokenUsage.model_fields}
        )


class Run(WireModel):
    run_id: str
    session_id: str
    interaction_id: str
    agent_name: str
    agent_id: str
    status: RunStatus
    error: ErrorInfo | None = None
    # the worker executing the run, and until when its claim holds (a worker that died lets it lapse)
    claimed_by: str | None = None
    lease_expires_at: str | None = None
    created_at: str
    updated_at: str
    ended_at: str | None = None
    # the tokens the run's model calls used, where the model counts them
    usage: TokenUsage | None = None


class Message(WireModel):
    message_id: str
    session_id: str
    interaction_id: str
    run_id: str
    seq: int
    role: MessageRole
    type: MessageType = "message"
    content: list[ContentPart]
    created_at: str
    updated_at: str


class Vote(WireModel):
    """One approver's answer to an action that needs several (a quorum): who, what, when, why."""

    user_id: str
    status: ResponseStatus
    at: str
    reason: str | None = None


class Approvals(WireModel):
    """Who may answer a tool's actions (CONTRACT 11): the users and groups listed (in any session), and
    the session's owner unless `self_approval` is false (four eyes); `required` distinct approvals
    resolve it. Kept on each pending action, so a later change of the settings leaves it as asked."""

    model_config = ConfigDict(frozen=True)

    users: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    required: int = Field(default=1, ge=1, le=MAX_APPROVERS)
    self_approval: bool = True

    @model_validator(mode="after")
    def _reachable(self) -> Self:
        if len(self.users) + len(self.groups) > MAX_APPROVERS:
            raise ValueError(f"at most {MAX_APPROVERS} approvers (users and groups together)")
        if not self.self_approval and not self.users and not self.groups:
            raise ValueError("self_approval false needs approvers (users or groups): nobody could approve")
        named = len(set(self.users)) + (1 if self.self_approval else 0)
        if not self.groups and self.required > named:
            raise ValueError(f"required {self.required} is more than the {named} people who may approve")
        return self


class PersonDecided(WireModel):
    """A person answered the action (the session's owner, or an approver)."""

    kind: Literal["person"] = "person"
    user_id: str


class PolicyDecided(WireModel):
    """The agent's approval policy decided the call without asking: the policies that did (CONTRACT 10)."""

    kind: Literal["policy"] = "policy"
    policy_ids: list[str] = Field(default_factory=list)
    # "run": a call a person approved, denied as it was about to run (a forbid that held then)
    at: Literal["run"] | None = Field(default=None, exclude_if=lambda at: at is None)


class GrantDecided(WireModel):
    """A standing grant of the session allowed the call without asking."""

    kind: Literal["grant"] = "grant"
    grant_id: str


class ExpiryDecided(WireModel):
    """Nobody answered before the action's time: it expired."""

    kind: Literal["expiry"] = "expiry"


DecidedBy = Annotated[
    PersonDecided | PolicyDecided | GrantDecided | ExpiryDecided, Field(discriminator="kind")
]


class ActionResponseRecord(WireModel):
    """The response that resolved an action: what was answered, by whom, when; the hash of the args
    the approver saw, where the response named it; the args it approved instead, with their hash."""

    status: ResponseStatus
    request_id: str
    who: str
    when: str
    reason: str | None = None
    args_sha256: str | None = None
    edited_args: dict[str, Any] | None = None
    edited_args_sha256: str | None = None
    # the hash of the whole request that answered (a retry of it with the same request_id is recognised)
    request_sha256: str | None = None
    # who decided (CONTRACT 11): a person, the policy, a grant, the expiry; a response stored before it
    # was kept is a person's, `who`
    by: DecidedBy | None = None
    # every approver's vote, where the tool names its approvers (the last one decided)
    votes: list[Vote] | None = None

    @model_validator(mode="after")
    def _decided_by(self) -> Self:
        if self.by is None:
            self.by = PersonDecided(user_id=self.who)
        return self


class ToolOutcome(WireModel):
    status: Literal["ok", "error"]
    output: Any = None
    error: ErrorInfo | None = None


class Action(WireModel):
    action_id: str
    session_id: str
    interaction_id: str
    run_id: str
    user_id: str
    agent_name: str
    kind: Literal["confirmation"] = "confirmation"
    tool: str
    # the args as the agent asked for them, and their hash (args_sha256 above)
    args: dict[str, Any] = Field(default_factory=dict)
    args_sha256: str = ""
    status: ActionStatus
    # past this time (ISO-8601 UTC) a pending action is no longer answered: it is stored `expired`
    expires_at: str | None = None
    response: ActionResponseRecord | None = None
    # the run that resolved it; for an expired action, the run that told the agent so
    resolved_run_id: str | None = None
    # the args the tool runs with (the edited ones where the approver edited them), once approved
    run_args: dict[str, Any] | None = None
    run_args_sha256: str | None = None
    outcome: ToolOutcome | None = None
    # the W3C traceparent of the run that asked for it (its `invoke_agent` span), where it was traced: the
    # run that resumes it links to that span (no span stays open while a person decides)
    traceparent: str | None = None
    # who may answer it, where its tool says (else the session's owner alone), and the votes given so far
    approvals: Approvals | None = None
    votes: list[Vote] = Field(default_factory=list)
    # whether its owner's approval may grant its tool for the rest of the session (a client offers it)
    grantable: bool | None = None
    created_at: str
    updated_at: str

    @model_validator(mode="after")
    def _hashed(self) -> Self:
        """An action stored before its hash was kept gets it from its args."""
        if not self.args_sha256:
            self.args_sha256 = args_sha256(self.args)
        return self


def expired(action: Action, now: str) -> Action:
    """The action as its expiry stores it: `expired`, its response saying that nobody answered in time."""
    response = ActionResponseRecord(
        status="cancelled", request_id="", who="expiry", when=now, by=ExpiryDecided()
    )
    return action.model_copy(update={"status": "expired", "updated_at": now, "response": response})


def overdue(action: Action, now: str) -> bool:
    """A pending action whose time to be answered has passed (`now` as utc_now writes it)."""
    return action.status == "pending" and action.expires_at is not None and action.expires_at <= now


def overdue_cursor(action: Action) -> str:
    """Where a pending action sits among all pending actions, soonest to expire first: the cursor of a
    page of `list_overdue_actions` that ends with it."""
    return f"{action.expires_at}#{action.action_id}"


def action_cursor(action: Action) -> str:
    """Where an action sits among its session's actions (by status, then oldest first): the cursor of a
    page that ends with it."""
    return f"{action.status}#{action.created_at}#{action.action_id}"


class RequestRecord(WireModel):
    """An idempotency record: a caller's `request_id`, the hash of the request first sent with it, and
    the first answer (JSON) once there is one. `claim_id` names the process answering it; past
    `lease_expires_at` (epoch s) an unanswered claim is taken to be a dead one's, and past `expires_at`
    (epoch s, the TTL) the record is ignored and the request_id free again."""

    user_id: str
    request_id: str
    request_sha256: str
    status: RequestStatus
    claim_id: str
    answer: dict[str, Any] | None = None
    created_at: str
    lease_expires_at: int
    expires_at: int

    def holds(self, now: int) -> bool:
        """Whether it still holds its request_id at `now`: not expired, and answered or its claim alive."""
        return self.expires_at > now and (self.status == "completed" or self.lease_expires_at > now)


class Connection(WireModel):
    """A WebSocket connection subscribed to a session's frames until it closes or `expires_at` (epoch s)."""

    connection_id: str
    session_id: str
    user_id: str
    # the subscriber's groups as their identity gave them at $connect (a token's groups claim)
    groups: list[str] = Field(default_factory=list)
    connected_at: str
    expires_at: int

"""What a policy decides for one proposed tool call (CONTRACT 10); no Cedar here, so the pipeline and the
runner can read a decision without importing cedarpy."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from beam_store.records import ErrorInfo, ToolResultPart

Effect = Literal["allow", "ask", "deny"]
# the code a denied call's tool message and tool_result frame carry (the tool did not run)
DENIED_CODE = "BEM-080"
# the code of a call whose args hold a number the policy cannot read (values.UnfitArgs): never decided
UNREADABLE_CODE = "BEM-082"

if TYPE_CHECKING:
    from .values import UnfitArgs


def unreadable_message(tool: str, error: UnfitArgs) -> str:
    """What the agent is told of a call whose args the policy cannot read: the field and why."""
    return f"{tool}: invalid arguments: {error.field}: {error.problem}"


@dataclass(frozen=True)
class Decision:
    """`effect`: `allow` runs the call unasked, `ask` waits for a person, `deny` never runs it;
    `policy_ids`: the `@id`s of the policies that made it (Cedar's own ids where none is given);
    `grant_id`: the session's standing grant that allowed it, where one did; `unattended_forbidden`:
    on an ask, a `forbid` of `run_unattended` matched (so no grant may allow it either); `erred`: on a
    deny, the forbids whose condition failed to evaluate on the call's args (they count as holding)."""

    effect: Effect
    policy_ids: tuple[str, ...] = ()
    grant_id: str | None = None
    unattended_forbidden: bool = False
    erred: tuple[str, ...] = ()

    def by(self) -> dict[str, Any]:
        """Who decided, as an action's `response.by` says it."""
        if self.grant_id is not None:
            return {"kind": "grant", "grant_id": self.grant_id}
        return {"kind": "policy", "policy_ids": list(self.policy_ids)}

    def denial(self, tool: str) -> str:
        """What the agent is told of a denied call."""
        named = f" ({', '.join(self.policy_ids)})" if self.policy_ids else ""
        failed = (
            f"; the condition of {', '.join(self.erred)} fails on these args, so it counts as holding"
            if self.erred
            else ""
        )
        return f"the approval policy denies {tool}{named}: it did not run{failed}"


@dataclass(frozen=True)
class DecidedCall:
    """A call decided without asking that is kept as an Action: denied, or allowed though its tool
    asks by itself. `action_id` is the call's id (its tool_call_id)."""

    action_id: str
    tool: str
    args: dict[str, Any] = field(default_factory=dict)
    decision: Decision = Decision("deny")

    def refusal(self, *, when_run: bool = False) -> ToolResultPart:
        """The tool result that tells the agent its call was denied (the tool did not run); `when_run`: a
        call a person approved, denied as it was about to run."""
        denial = self.decision.denial(self.tool)
        if when_run:
            denial = (
                denial.replace(" denies ", " denies now ", 1) + " (approved, then refused when it was to run)"
            )
        error = ErrorInfo(code=DENIED_CODE, message=denial)
        return ToolResultPart(tool_call_id=self.action_id, name=self.tool, status="refused", error=error)

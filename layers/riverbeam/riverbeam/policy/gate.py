"""The one place a proposed tool call is decided (CONTRACT 10): the agent's policy where it has one,
else the tool's own `confirm_required` (asks) or not (runs); a call that would ask and that one of the
session's standing grants covers runs, unless a policy forbids it. A gate is made per run, for the session's
owner and the requester's groups; it imports no Cedar (the policy it is given already has).

The grants are read when a call would ask, not once a run (a consistent read of the session): a grant
revoked while the run works covers none of its later calls. A grant covers only its own agent's tool, and
only while the tool may still be granted (its settings now: no four eyes, no quorum, grantable)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from beam_store import ErrorInfo, Grant, args_sha256

from ..tools import unfit_message
from .decision import UNREADABLE_CODE, Decision, unreadable_message
from .values import UnfitArgs

if TYPE_CHECKING:
    from .cedar import Policy

ASK = Decision("ask")
RUN = Decision("allow")
GrantsReader = Callable[[], Iterable[Grant]]
# the (field, problem) pairs of args that do not fit a tool's schema (a runner's validate_args)
Validate = Callable[[str, dict[str, Any]], Iterable[tuple[str, str]]]
# the code of a call whose args do not fit its tool's schema: never decided nor asked about
UNFIT_CODE = "BEM-332"


class CallGate:
    """Decides each call of one run. A plain class: made once a run, read by the runner."""

    def __init__(
        self,
        policy: Policy | None,
        *,
        user_id: str,
        agent: str,
        session_id: str,
        groups: Sequence[str] = (),
        grants: Sequence[Grant] = (),
        read_grants: GrantsReader | None = None,
        grantable: Callable[[str], bool] = lambda tool: True,
    ) -> None:
        self.policy = policy
        self.user_id, self.agent, self.session_id = user_id, agent, session_id
        self.groups = tuple(groups)
        # the session's standing grants as the run started (whether grants decide at all)
        self.grants = tuple(grants)
        # the session's grants as they are now (else those it started with)
        self.read_grants: GrantsReader = read_grants or (lambda: self.grants)
        # whether the tool may be granted by its settings now (pipeline/grants.may_grant)
        self.grantable = grantable

    @property
    def decides(self) -> bool:
        """Whether anything beside the tools' own confirm_required decides (a policy, a grant)."""
        return self.policy is not None or bool(self.grants)

    def decide(self, tool: str, args: dict[str, Any], *, confirm_required: bool) -> Decision:
        decision = self._by_policy(tool, args, confirm_required=confirm_required)
        if decision.effect != "ask" or decision.unattended_forbidden or not self.grantable(tool):
            return decision
        grant = self._covering(tool, args)
        return decision if grant is None else Decision("allow", grant_id=grant.grant_id)

    def _covering(self, tool: str, args: dict[str, Any]) -> Grant | None:
        """The session's grant, read now, that covers this agent's call; None where none does."""
        digest = args_sha256(args)
        return next((g for g in self.read_grants() if g.covers(self.agent, tool, digest)), None)

    def _by_policy(self, tool: str, args: dict[str, Any], *, confirm_required: bool) -> Decision:
        if self.policy is None:
            return ASK if confirm_required else RUN
        return self.policy.decide(
            tool=tool,
            args=args,
            user_id=self.user_id,
            groups=self.groups,
            agent=self.agent,
            confirm_required=confirm_required,
            session_id=self.session_id,
        )


def verdict(
    gate: CallGate | None,
    tool: str,
    args: dict[str, Any],
    *,
    confirm_required: bool,
    validate: Validate | None = None,
) -> Decision | ErrorInfo | None:
    """The one verdict on a proposed call, whatever the runner: why it cannot run (its args do not fit the
    tool's schema, strictly, or hold a number the policy cannot read: never decided nor asked about,
    CONTRACT 3.12), else the gate's decision (None: no gate, the tool's confirm_required decides)."""
    try:
        problems = list(validate(tool, args)) if validate is not None else []
        if problems:
            return ErrorInfo(code=UNFIT_CODE, message=unfit_message(tool, problems))
        return gate.decide(tool, args, confirm_required=confirm_required) if gate is not None else None
    except UnfitArgs as unfit:
        return ErrorInfo(code=UNREADABLE_CODE, message=unreadable_message(tool, unfit))


def recorded(decision: Decision, *, confirm_required: bool) -> bool:
    """Whether a decision is kept as an Action: every deny, and an allow of a call that would have
    asked (a tool that asks by itself); a call that runs and that nobody would have asked about is not."""
    return decision.effect == "deny" or (decision.effect == "allow" and confirm_required)

"""The one place a proposed tool call is decided (CONTRACT 10): the agent's policy where it has one,
else the tool's own `confirm_required` (asks) or not (runs); a call that would ask and that one of the
session's standing grants covers runs, unless a policy forbids it. A gate is made per run, for the session's
owner and the requester's groups; it imports no Cedar (the policy it is given already has).

The grants are read when a call would ask, not once a run (a consistent read of the session): a grant
revoked while the run works covers none of its later calls. A grant covers only its own agent's tool, and
only while the tool may still be granted (its settings now: no four eyes, no quorum, grantable)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from beam_store import ErrorInfo, Grant, args_sha256

from ..tools import unfit_message
from .decision import UNREADABLE_CODE, Decision, unreadable_message
from .moments import calls_context, now_context
from .values import UnfitArgs

if TYPE_CHECKING:
    from .cedar import Policy

ASK = Decision("ask")
RUN = Decision("allow")
GrantsReader = Callable[[], Iterable[Grant]]
# when the session's calls ran before this run, by tool (the policy's `calls`)
RanBefore = Callable[[], Mapping[str, list[datetime]]]
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
        clock: Callable[[], datetime] | None = None,
        timezone: str = "UTC",
        ran_before: RanBefore | None = None,
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
        # the policy's `now` (in the agent's time zone) and `calls` (moments.py): the session's calls
        # that ran before this run, read once where a policy counts them, and this run's own
        self.clock = clock or (lambda: datetime.now(UTC))
        self.timezone = timezone
        self._ran_before = ran_before or (lambda: {})
        self._ran_earlier: Mapping[str, list[datetime]] | None = None
        self._ran_here: dict[str, list[datetime]] = {}

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

    def ran(self, tool: str) -> None:
        """A call of `tool` ran in this run: it counts in the policy's `calls` from now on."""
        self._ran_here.setdefault(tool, []).append(self.clock())

    def moment(self, tool: str) -> tuple[dict[str, Any], Mapping[str, int] | None]:
        """The policy's `now` and `calls` for a call of `tool` decided now (calls: None where no policy of
        the agent counts them)."""
        moment = self.clock()
        now = now_context(moment, self.timezone)
        if self.policy is None or not self.policy.counts_calls:
            return now, None
        if self._ran_earlier is None:
            self._ran_earlier = self._ran_before()
        ran = [*self._ran_earlier.get(tool, ()), *self._ran_here.get(tool, ())]
        return now, calls_context(ran, moment)

    def decided_again(self, tool: str, args: dict[str, Any]) -> Decision | None:
        """A call a person approved, decided again as it is about to run (CONTRACT 17): the policy's deny
        where a forbid holds now (the office closed, the hour's budget spent), else None (it runs)."""
        if self.policy is None:
            return None
        try:
            decision = self._by_policy(tool, args, confirm_required=True)
        except UnfitArgs:
            return None  # judged readable when it was asked: its stored args do not change
        return decision if decision.effect == "deny" else None

    def _covering(self, tool: str, args: dict[str, Any]) -> Grant | None:
        """The session's grant, read now, that covers this agent's call; None where none does."""
        digest = args_sha256(args)
        return next((g for g in self.read_grants() if g.covers(self.agent, tool, digest)), None)

    def _by_policy(self, tool: str, args: dict[str, Any], *, confirm_required: bool) -> Decision:
        if self.policy is None:
            return ASK if confirm_required else RUN
        now, calls = self.moment(tool)
        return self.policy.decide(
            tool=tool,
            args=args,
            user_id=self.user_id,
            groups=self.groups,
            agent=self.agent,
            confirm_required=confirm_required,
            session_id=self.session_id,
            now=now,
            calls=calls,
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

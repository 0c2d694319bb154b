"""What every stage of a step is given: the store, the agents and the settings that the RiverBeam holds."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from ..errors import BeamError

if TYPE_CHECKING:  # annotations only: a read imports neither the agents nor the approval events
    from beam_store import BeamStore
    from beam_store.records import Approvals

    from ..agent.registry import AgentRunner
    from ..policy import Policy
    from .approval_events import EventSink

DEFAULT_FRAME_TTL_SECONDS = 24 * 3600
# text deltas closer than this are sent as one frame: about 10 a second per run at most
DEFAULT_COALESCE_SECONDS = 0.1
# a worker holds a run this long; its queue must not redeliver the job sooner (visibility timeout)
DEFAULT_LEASE_SECONDS = 900
# a person has this long to answer an action, unless its agent or its tool says otherwise
DEFAULT_ACTION_TTL_SECONDS = 24 * 3600
# a sweep looks at this many overdue actions at most; the next sweep goes on
DEFAULT_SWEEP_LIMIT = 1000
# a request with a request_id that is not answered within this is taken to have died with its process:
# a retry may then answer it (so it must outlast the longest request: a non-streamed invoke's run)
DEFAULT_REQUEST_LEASE_SECONDS = 900
Clock = Callable[[], datetime]


def utc_clock() -> datetime:
    return datetime.now(UTC)


def iso(moment: datetime) -> str:
    """A time as the records hold it (beam_store.utc_now's form, so that they sort as strings)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Setup:
    """A plain class, not a data class: one costs every cold start a millisecond or more to make."""

    def __init__(
        self,
        store: BeamStore,
        *,
        frame_ttl_seconds: int = DEFAULT_FRAME_TTL_SECONDS,
        coalesce_seconds: float = DEFAULT_COALESCE_SECONDS,
        clock: Clock = utc_clock,
        events: EventSink | None = None,
        request_lease_seconds: int = DEFAULT_REQUEST_LEASE_SECONDS,
    ) -> None:
        self.store = store
        self.agents: dict[str, AgentRunner] = {}
        self.frame_ttl_seconds = frame_ttl_seconds
        self.coalesce_seconds = coalesce_seconds
        # what time it is: expiry is decided by it (tests give another)
        self.clock = clock
        # the seconds each agent gives a person to answer, where it says (else the default)
        self.action_ttls: dict[str, float] = {}
        # each agent's approval policy, where it has one (CONTRACT 10)
        self.policies: dict[str, Policy] = {}
        # who may answer each agent's tools' actions, where register_agent names them (CONTRACT 11)
        self.approvals: dict[str, dict[str, Approvals]] = {}
        # each agent's time zone, where it names one (the policy's `now`: CONTRACT 17); else UTC
        self.timezones: dict[str, str] = {}
        # agents registered on first use (RiverBeam.register_agents_on_first_use), in the order given
        self.loaders: list[Callable[[], None]] = []
        # where approval events go (events.py), after the writes they tell of; None: nowhere
        self.events = events
        self.request_lease_seconds = request_lease_seconds
        self._loading = threading.RLock()

    def load_agents(self) -> None:
        """Run the loaders not run yet; one that fails stays, to be run again by the next request."""
        with self._loading:
            while self.loaders:
                self.loaders[0]()
                self.loaders.pop(0)

    def runner(self, agent_name: str) -> AgentRunner:
        if self.loaders:
            self.load_agents()
        runner = self.agents.get(agent_name)
        if runner is None:
            raise BeamError("BEM-021", f"unknown agent_name {agent_name!r}", field="agent_name")
        disabled = getattr(runner, "disabled_error", None)
        if callable(disabled):  # an agent that cannot run now (agent.mcp_servers.DisabledAgent)
            raise disabled()
        return runner

    def now(self) -> str:
        return iso(self.clock())

    def expires_at(self, agent_name: str, expires_after: float | None) -> str:
        """When an action asked for now expires: after the tool's time, else the agent's, else 24 h."""
        ttl = expires_after if expires_after is not None else self.action_ttls.get(agent_name)
        seconds = ttl if ttl is not None else DEFAULT_ACTION_TTL_SECONDS
        return iso(self.clock() + timedelta(seconds=seconds))

    def frames_expire_at(self) -> int:
        """When the frames a step keeps now expire (epoch seconds): DynamoDB's TTL, by the wall clock."""
        return int(time.time()) + self.frame_ttl_seconds

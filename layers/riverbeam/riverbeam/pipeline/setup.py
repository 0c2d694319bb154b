"""What every stage of a step is given: the store, the agents and the settings that the RiverBeam holds."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from beam_store import BeamStore

from ..agents import AgentRunner
from ..errors import BeamError

DEFAULT_FRAME_TTL_SECONDS = 24 * 3600
# text deltas closer than this are sent as one frame: about 10 a second per run at most
DEFAULT_COALESCE_SECONDS = 0.1
# a worker holds a run this long; its queue must not redeliver the job sooner (visibility timeout)
DEFAULT_LEASE_SECONDS = 900


@dataclass
class Setup:
    store: BeamStore
    agents: dict[str, AgentRunner] = field(default_factory=dict)
    frame_ttl_seconds: int = DEFAULT_FRAME_TTL_SECONDS
    coalesce_seconds: float = DEFAULT_COALESCE_SECONDS

    def runner(self, agent_name: str) -> AgentRunner:
        runner = self.agents.get(agent_name)
        if runner is None:
            raise BeamError("BEM-021", f"unknown agent_name {agent_name!r}", field="agent_name")
        return runner

    def frames_expire_at(self) -> int:
        """When the frames a step keeps now expire (epoch seconds)."""
        return int(time.time()) + self.frame_ttl_seconds

"""Each agent's approval policy named in agents.yaml: `policy: <file>.cedar`, a path relative to the agents
file (CONTRACT 10). Cedar (cedarpy) is imported only where an agent names a policy."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..policy import Policy


class PolicyFileError(ValueError):
    """An agent's policy file cannot be used; the message names the agent, the file and the line."""


def load_policies(named: Mapping[str, str | None], agents_file: str | Path) -> dict[str, Policy]:
    """The policy of each agent that names one (`named`: agent -> path), each file parsed once."""
    wanted = {agent: path for agent, path in named.items() if path}
    if not wanted:
        return {}
    from ..policy import Policy

    base = Path(agents_file).parent
    policies = {}
    for agent, path in wanted.items():
        try:
            policies[agent] = Policy.from_file(base / path)
        except ValueError as error:
            raise PolicyFileError(f"agents.{agent}.policy: {error}") from None
    return policies

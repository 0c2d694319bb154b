"""When a session's calls ran, by tool: the policy's `calls` (CONTRACT 17) counts them over a rolling hour
and day. Read from the session's tool messages (every call that ran has one, asked or not), once a run and
only where the agent's policy reads `calls`; the run's own calls are counted by its gate as they run."""

from __future__ import annotations

from datetime import datetime

from beam_store import BeamStore, ToolResultPart

# tool results of calls that never ran: args that do not fit (332, 333, 082, 045, 046), denied (080, 084),
# refused by a person (069), expired unanswered (070)
NEVER_RAN = frozenset(
    {"BEM-332", "BEM-333", "BEM-082", "BEM-045", "BEM-046", "BEM-080", "BEM-084", "BEM-069", "BEM-070"}
)


def ran_before(store: BeamStore, session_id: str) -> dict[str, list[datetime]]:
    ran: dict[str, list[datetime]] = {}
    for message in store.list_messages(session_id):
        if message.role != "tool":
            continue
        for part in message.content:
            if isinstance(part, ToolResultPart) and _ran(part):
                ran.setdefault(part.name, []).append(datetime.fromisoformat(message.created_at))
    return ran


def _ran(part: ToolResultPart) -> bool:
    if part.status == "ok":
        return True
    return part.status == "error" and (part.error is None or part.error.code not in NEVER_RAN)

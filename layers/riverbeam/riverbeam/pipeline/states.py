"""A runner's paused state (CONTRACT 15), kept with the interaction: read for the interaction's next run,
kept or dropped by the run's closing write. Only a runner with `keeps_state` has one (the built-in runner
keeps none, and costs no read).

The state is kept with the runner's `fingerprint()` (its agent and its tools' input schemas): a run that
finds another fingerprint than its runner's fails BEM-083 naming what changed, before the runner runs, so
no tool runs against a pause made by another agent. A failed run drops the state: the interaction's next
run starts from the session's messages, never from a pause its answers may no longer fit."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from ..errors import BeamError

if TYPE_CHECKING:
    from beam_store import BeamStore

    from ..agent.registry import AgentRunner
    from ..models import AgentResult

StateOp = Literal["put", "delete"] | None


def keeps_state(runner: AgentRunner) -> bool:
    return bool(getattr(runner, "keeps_state", False))


def fingerprint(runner: AgentRunner) -> dict[str, Any]:
    made = getattr(runner, "fingerprint", None)
    return dict(made()) if callable(made) else {}


def read(store: BeamStore, runner: AgentRunner, interaction_id: str) -> Any:
    """The state the interaction's last run kept (None: none, or a runner that keeps none); BEM-083 where
    it was kept by another agent than `runner`."""
    if not keeps_state(runner):
        return None
    kept = store.get_state(interaction_id)
    if not isinstance(kept, dict) or "value" not in kept:
        return None
    changed = changes(kept.get("fingerprint") or {}, fingerprint(runner))
    if changed:
        raise BeamError("BEM-083", f"the agent changed since its run paused: {changed}; no tool ran")
    return kept["value"]


def changes(kept: dict[str, Any], now: dict[str, Any]) -> str:
    """What differs between two fingerprints, said briefly ("" where nothing does)."""
    said = []
    if kept.get("agent") != now.get("agent"):
        said.append(f"the agent was {kept.get('agent')!r}, is {now.get('agent')!r}")
    before, after = kept.get("tools") or {}, now.get("tools") or {}
    said += [f"the tool {name!r} is gone" for name in sorted(set(before) - set(after))]
    said += [f"the tool {name!r} is new" for name in sorted(set(after) - set(before))]
    said += [
        f"the tool {name!r} takes other args"
        for name in sorted(set(before) & set(after))
        if before[name] != after[name]
    ]
    return "; ".join(said[:4])[:400]


def closing(runner: AgentRunner, result: AgentResult, failed: bool) -> tuple[StateOp, Any]:
    """What the closing write does with the interaction's state: keep the runner's new one (with its
    fingerprint), drop it (a run that failed, or returned none), or nothing (a runner that keeps none)."""
    if not keeps_state(runner):
        return None, None
    if failed or result.state is None:
        return "delete", None
    return "put", {"fingerprint": fingerprint(runner), "value": result.state}

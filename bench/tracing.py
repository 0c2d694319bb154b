"""What tracing costs the approval loop: loops per second in process, with tracing off and on.

    python bench/tracing.py [--rounds 5] [--seconds 3]

A loop is Riverbeam's approval loop through RiverBeam's public methods on an InMemoryStore (no DynamoDB, so
the pipeline's own cost is what is measured): an invoke whose agent (ToolAgentRunner, ScriptedModel) asks
to run a tool that needs approval, then the resume that approves it (the tool runs, the agent answers).
Each loop is a new session. Traced, that is two `invoke_agent` spans (the second linked to the first), three
`chat` spans and one `execute_tool` span, and the asking run's trace context stored on the action.

- off: no tracer provider (OpenTelemetry's API alone, as a deployment without ADOT runs: every span a no-op);
- on:  OpenTelemetry's SDK TracerProvider, every span sampled and recorded, and no exporter (what the spans
       cost to make, not what an exporter costs to send them).

A tracer provider is set once per process, so each sample is a fresh interpreter running loops for
--seconds after a warm-up; samples alternate (off, on, off, on, ...) so that the machine's noise falls on both
alike. Printed: each mode's median loops/s over --rounds samples, and on / off (the goal: at least 0.97).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MODES = ("off", "on")
WARM_UP_LOOPS = 20


def _beam() -> Any:
    from beam_store import InMemoryStore
    from riverbeam import ModelTurn, RiverBeam, ScriptedModel, ToolAgentRunner, ToolCall, tool

    @tool(confirm_required=True)
    def git_push(ref: str) -> dict[str, str]:
        """Push a branch (counted, not run)."""
        return {"ref": ref}

    @tool()
    def git_status() -> str:
        """The work tree's status (runs without asking)."""
        return "clean"

    model = ScriptedModel(
        [
            ModelTurn(text="Looking.", tool_calls=[ToolCall(name="git_status")]),
            ModelTurn(text="I will push it.", tool_calls=[ToolCall(name="git_push", args={"ref": "docs/x"})]),
            ModelTurn(text="Pushed."),
        ]
    )
    beam = RiverBeam(InMemoryStore())
    beam.register_agent("author", ToolAgentRunner(model=model, tools=[git_push, git_status]))
    return beam


def _loop(beam: Any) -> None:
    user = {"user_id": "bench"}
    content = [{"type": "text", "text": "push docs/x"}]
    asked = beam.invoke(
        {"agent_name": "author", "session_id": str(uuid.uuid4()), "content": content, "auth_context": user}
    )
    action = asked.action_required[0]
    response = {
        "action_id": action.action_id,
        "kind": "confirmation",
        "request_id": str(uuid.uuid4()),
        "status": "submitted",
        "payload": {"tool": action.tool, "args": action.args},
    }
    beam.resume(
        {
            "agent_name": "author",
            "session_id": asked.session_id,
            "interaction_id": asked.interaction_id,
            "actions": [response],
            "auth_context": user,
        }
    )


def sample(mode: str, seconds: float) -> float:
    """Loops per second in this process, with tracing `mode`."""
    if mode == "on":
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider

        trace.set_tracer_provider(TracerProvider())
    beam = _beam()
    for _ in range(WARM_UP_LOOPS):
        _loop(beam)
    loops, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        _loop(beam)
        loops += 1
    return loops / elapsed


def _spawn(mode: str, seconds: float) -> float:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "layers" / "riverbeam"), str(ROOT / "store")]),
    }
    env.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    found = subprocess.run(
        [sys.executable, __file__, "--sample", mode, "--seconds", str(seconds)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    return float(json.loads(found.stdout.strip().splitlines()[-1])["loops_per_second"])


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=5, help="samples per mode (default: %(default)s)")
    parser.add_argument(
        "--seconds", type=float, default=3.0, help="each sample's loops (default: %(default)s)"
    )
    parser.add_argument("--sample", choices=MODES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.sample:
        print(json.dumps({"loops_per_second": sample(args.sample, args.seconds)}))
        return 0
    figures: dict[str, list[float]] = {mode: [] for mode in MODES}
    for _ in range(args.rounds):
        for mode in MODES:
            figures[mode].append(_spawn(mode, args.seconds))
    off, on = (statistics.median(figures[mode]) for mode in MODES)
    print(f"{'tracing':<10}{'loops/s (median)':>18}   samples")
    for mode in MODES:
        samples = " ".join(f"{v:.0f}" for v in figures[mode])
        print(f"{mode:<10}{statistics.median(figures[mode]):>18.1f}   {samples}")
    print(f"on / off: {on / off:.3f} (goal: at least 0.97)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

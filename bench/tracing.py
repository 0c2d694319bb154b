"""What tracing costs the approval loop: loops per CPU second in process, with tracing off and on.

    python bench/tracing.py [--rounds 5] [--seconds 3] [--store memory|server]

A loop is Riverbeam's approval loop through RiverBeam's public methods: an invoke whose agent
(ToolAgentRunner, ScriptedModel) asks to run a tool that needs approval, then the resume that approves it
(the tool runs, the agent answers). Each loop is a new session. Traced, that is two `invoke_agent` spans (the
second linked to the first), three `chat` spans and two `execute_tool` spans, and the asking run's trace
context stored on the action.

The store is an InMemoryStore (`memory`, the default: no DynamoDB, so the pipeline's own cost is what is
measured and the spans' share of it is the largest it can be) or DynamoBeamStore on the embedded
DynamoDB-compatible server in a child process (`server`: the CPU counted is the client's, as a Lambda function
spends it, its DynamoDB requests served elsewhere).

- off: no tracer provider (OpenTelemetry's API alone, as a deployment without ADOT runs: no span is made);
- on:  OpenTelemetry's SDK TracerProvider, every span sampled and recorded, and no exporter (what the spans
       cost to make, not what an exporter costs to send them).

A tracer provider is set once per process, so each sample is a fresh interpreter running loops for
--seconds of CPU time after a warm-up; samples alternate (off, on, off, on, ...) so that the machine's noise
falls on both alike. Loops are counted per second of the process's CPU time, which other work on the machine
shakes less than the wall clock (on a loaded machine a wall-clock sample varied threefold). Printed: each
mode's median loops per CPU second over --rounds samples, and on / off (the goal: at least 0.97).
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
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MODES = ("off", "on")
WARM_UP_LOOPS = 20


def _beam(store: Any) -> Any:
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
    beam = RiverBeam(store)
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


@contextmanager
def _store(kind: str) -> Iterator[Any]:
    if kind == "memory":
        from beam_store import InMemoryStore

        yield InMemoryStore()
        return
    import boto3
    from beam_store import DynamoBeamStore
    from beam_store.embedded import embedded_dynamodb

    for name, value in (("AWS_ACCESS_KEY_ID", "bench"), ("AWS_SECRET_ACCESS_KEY", "bench")):
        os.environ.setdefault(name, value)
    with embedded_dynamodb() as url:
        client = boto3.client("dynamodb", endpoint_url=url, region_name="us-east-1")
        yield DynamoBeamStore.connect(f"riverbeam-tracing-{uuid.uuid4().hex[:8]}", client=client)


def sample(mode: str, seconds: float, store: str) -> float:
    """Loops per second of this process's CPU time, with tracing `mode`."""
    if mode == "on":
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider

        trace.set_tracer_provider(TracerProvider())
    with _store(store) as opened:
        return _measure(_beam(opened), seconds)


def _measure(beam: Any, seconds: float) -> float:
    for _ in range(WARM_UP_LOOPS):
        _loop(beam)
    loops, start = 0, time.process_time()
    while (elapsed := time.process_time() - start) < seconds:
        _loop(beam)
        loops += 1
    return loops / elapsed


def _spawn(mode: str, seconds: float, store: str) -> float:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "layers" / "riverbeam"), str(ROOT / "store")]),
    }
    env.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    found = subprocess.run(
        [sys.executable, __file__, "--sample", mode, "--seconds", str(seconds), "--store", store],
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
        "--seconds", type=float, default=3.0, help="each sample's CPU seconds of loops (default: %(default)s)"
    )
    parser.add_argument("--store", choices=("memory", "server"), default="memory", help="(default: memory)")
    parser.add_argument("--sample", choices=MODES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.sample:
        print(json.dumps({"loops_per_second": sample(args.sample, args.seconds, args.store)}))
        return 0
    figures: dict[str, list[float]] = {mode: [] for mode in MODES}
    for _ in range(args.rounds):
        for mode in MODES:
            figures[mode].append(_spawn(mode, args.seconds, args.store))
    off, on = (statistics.median(figures[mode]) for mode in MODES)
    print(f"{'tracing':<10}{'loops per CPU s (median)':>26}   samples")
    for mode in MODES:
        samples = " ".join(f"{v:.0f}" for v in figures[mode])
        print(f"{mode:<10}{statistics.median(figures[mode]):>26.1f}   {samples}")
    print(f"on / off: {on / off:.3f} (goal: at least 0.97)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

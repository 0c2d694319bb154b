"""What tracing costs the approval loop: loops per CPU second, with tracing off and on.

    python bench/tracing.py [--rounds 9] [--pairs 4] [--seconds 1.5] [--store server|memory]

A loop is Riverbeam's approval loop through RiverBeam's public methods: an invoke whose agent
(ToolAgentRunner, ScriptedModel) asks to run a tool that needs approval, then the resume that approves it
(the tool runs, the agent answers). Each loop is a new session. Traced, that is two `invoke_agent` spans (the
second linked to the first), three `chat` spans and two `execute_tool` spans, and the asking run's trace
context stored on the action. The scripted model's record of the conversations it was given (kept for
tests to read) is cleared after each loop: a heap that grows as the bench runs makes each full garbage
collection dearer, and the spans' allocations bring some about, so a growing heap would inflate tracing's
share with a cost no deployment has (a function keeps no such record).

The store is DynamoBeamStore on the embedded DynamoDB-compatible server in a child process (`server`, the
default: the store a deployment runs, through boto3, the CPU counted the client's, as a Lambda function
spends it, its DynamoDB requests served elsewhere) or an InMemoryStore (`memory`: no DynamoDB, so the
pipeline's own cost is all that is measured and the spans' share of it is the largest it can be).

- off: no tracer provider (OpenTelemetry's API alone, as a deployment without ADOT runs: no span is made);
- on:  OpenTelemetry's SDK TracerProvider, every span sampled and recorded, and no exporter (what the spans
       cost to make, not what an exporter costs to send them).
Both import the SDK; only `on` sets its provider.

Each round is a fresh interpreter that alternates the two modes in blocks of --seconds of its CPU time
(off, on, off, on, ... for --pairs pairs; every other round starts with on), after a warm-up of each, so
that both modes run in the same process on the same store at the same time: the spread between processes
(their memory layout, a store that grows) and the machine's drift fall on both alike. OpenTelemetry sets a
tracer provider once per process, so the bench switches its global provider itself (a private name of
`opentelemetry.trace`: the code under test sees no provider in an off block, the SDK's in an on block).
Loops are counted per second of CPU time, which other work on the machine shakes less than the wall clock.
Printed: each mode's loops per CPU second in each round; the median of the rounds' on / off with its range
(the goal: at least 0.97); and what tracing adds to a loop, in ms of CPU (the median of the rounds')."""

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


def _beam(store: Any) -> tuple[Any, Any]:
    """RiverBeam with the bench's agent, and its scripted model."""
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
    return beam, model


def _loop(beam: Any, model: Any) -> None:
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
    model.conversations.clear()  # the scripted model's record for tests, which would grow the heap


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


def _provide(provider: Any) -> None:
    """Sets OpenTelemetry's global tracer provider (None: none set), as `set_tracer_provider` would
    the first time; that function refuses a second call, so the bench sets the global itself."""
    from opentelemetry import trace

    trace._TRACER_PROVIDER = provider


def sample(seconds: float, pairs: int, store: str, first: str) -> dict[str, list[float]]:
    """Loops and CPU seconds of each mode, over `pairs` alternating blocks of `seconds` each, `first`
    first: {"off": [loops, cpu], "on": [loops, cpu]}."""
    from opentelemetry.sdk.trace import TracerProvider

    provider = TracerProvider()
    order = (first, *(mode for mode in MODES if mode != first))
    totals = {mode: [0.0, 0.0] for mode in MODES}
    with _store(store) as opened:
        beam, model = _beam(opened)
        for mode in order:  # warm both paths
            _provide(provider if mode == "on" else None)
            for _ in range(WARM_UP_LOOPS):
                _loop(beam, model)
        for _ in range(pairs):
            for mode in order:
                _provide(provider if mode == "on" else None)
                loops, elapsed = _block(beam, model, seconds)
                totals[mode][0] += loops
                totals[mode][1] += elapsed
    return totals


def _block(beam: Any, model: Any, seconds: float) -> tuple[int, float]:
    loops, start = 0, time.process_time()
    while (elapsed := time.process_time() - start) < seconds:
        _loop(beam, model)
        loops += 1
    return loops, elapsed


def _spawn(seconds: float, pairs: int, store: str, first: str) -> dict[str, float]:
    """One round in a fresh interpreter: each mode's loops per CPU second."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "layers" / "riverbeam"), str(ROOT / "store")]),
    }
    env.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    command = [sys.executable, __file__, "--sample", first, "--seconds", str(seconds), "--pairs", str(pairs)]
    found = subprocess.run(
        [*command, "--store", store], env=env, capture_output=True, text=True, check=True, timeout=1800
    )
    totals = json.loads(found.stdout.strip().splitlines()[-1])
    return {mode: loops / cpu for mode, (loops, cpu) in totals.items()}


def _report(rounds: list[dict[str, float]]) -> None:
    print(f"{'round':<7}{'off':>9}{'on':>9}{'on / off':>10}   (loops per CPU s)")
    for number, figures in enumerate(rounds, 1):
        off, on = figures["off"], figures["on"]
        print(f"{number:<7}{off:>9.1f}{on:>9.1f}{on / off:>10.3f}")
    ratios = sorted(r["on"] / r["off"] for r in rounds)
    added = statistics.median(1000 / r["on"] - 1000 / r["off"] for r in rounds)
    loop = statistics.median(1000 / r["off"] for r in rounds)
    print(
        f"on / off: median {statistics.median(ratios):.3f}, from {ratios[0]:.3f} to {ratios[-1]:.3f} "
        f"over {len(ratios)} rounds (goal: at least 0.97)"
    )
    print(f"tracing adds {added:.2f} ms of CPU to a loop of {loop:.2f} ms (medians of the rounds)")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=9, help="fresh interpreters (default: %(default)s)")
    parser.add_argument("--pairs", type=int, default=4, help="off/on pairs per round (default: %(default)s)")
    parser.add_argument(
        "--seconds", type=float, default=1.5, help="each block's CPU seconds of loops (default: %(default)s)"
    )
    parser.add_argument(
        "--store",
        choices=("server", "memory"),
        default="server",
        help="DynamoBeamStore on the embedded server, or an InMemoryStore (default: %(default)s)",
    )
    parser.add_argument("--sample", choices=MODES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.sample:
        print(json.dumps(sample(args.seconds, args.pairs, args.store, args.sample)))
        return 0
    print(
        f"store: {args.store}; {args.rounds} rounds, each {args.pairs} pairs of {args.seconds:g} CPU s "
        f"blocks; Python {sys.version.split()[0]}; load average {os.getloadavg()[0]:.1f}"
    )
    rounds = [_spawn(args.seconds, args.pairs, args.store, MODES[n % 2]) for n in range(args.rounds)]
    _report(rounds)
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""How a step's cost grows with the session: DynamoDB requests, items and bytes read, latency, by turns.

    python bench/growth.py [--turns 1,10,100] [--repeat 3] [--stores memory,server]
    python bench/growth.py --turns 1,10,100,500      # the issue's figures (500 turns take long on the server)

A turn is what Riverbeam's approval loop does: an invoke whose agent asks to run a tool that needs approval
(it interrupts), then the resume that approves it (the tool runs, the agent answers). The session grows turn
by turn through RiverBeam's public methods only; at each count of prior turns, each repetition measures:

    invoke                 RiverBeam.invoke, in process (an invoke that interrupts)
    resume                 RiverBeam.resume, in process (the resume that approves it)
    accept_invoke          the deployed split's API handler part of an invoke (RiverBeam.accept_invoke)
    run_job (invoke)       ... and its worker part (RiverBeam.run_job)
    accept_resume          the API handler part of the resume that approves it
    run_job (resume)       ... and its worker part

so a repetition adds two turns, and the split is measured one turn after the in-process pair. Stores: `memory`
(InMemoryStore: no DynamoDB; its calls and the records they return are counted instead) and `server`
(DynamoBeamStore on the embedded server, beam_store.embedded: the DynamoDB requests and the items and bytes
they read, by botocore's event hooks; bytes by DynamoDB's item-size rules, as bench/store_calls.py sizes
them). Requests, items and bytes are the first repetition's (exactly at the count of turns), latencies
the median of the repetitions. The last column is the figure at the most turns over the one at the fewest.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from beam_store import BeamStore, InMemoryStore
from riverbeam import AgentResult, ModelTurn, RiverBeam, ScriptedModel, ToolAgentRunner, ToolCall, tool
from store_calls import item_size

STEPS = ("invoke", "resume", "accept_invoke", "run_job (invoke)", "accept_resume", "run_job (resume)")
USER = {"user_id": "bench"}


# the offline model the tests use, ScriptedModel: asks to push after a person's message, answers once the
# push has run. It reads its place in the script from its last tool call, so the runner gives it the
# session's last messages only (the default window), as any model: the worker's reads stay flat too
ASK = ModelTurn(text="I will push it.", tool_calls=[ToolCall(name="git_push", args={"ref": "docs/x"})])
DONE = ModelTurn(text="Pushed.")


@tool(confirm_required=True)
def git_push(ref: str) -> dict[str, str]:
    """Push a branch (counted, not run)."""
    return {"ref": ref}


@dataclass
class Figures:
    requests: int = 0
    items: int = 0
    bytes: int | None = None


@dataclass
class Meter:
    """What the store was asked since the last take."""

    now: Figures = field(default_factory=Figures)

    def take(self) -> Figures:
        taken, self.now = self.now, Figures(bytes=None if self.now.bytes is None else 0)
        return taken


def count_records(value: Any) -> int:
    if value is None:
        return 0
    if isinstance(value, list | tuple):
        return sum(count_records(v) for v in value)
    return 1


def counted_memory_store(meter: Meter) -> InMemoryStore:
    """An InMemoryStore whose protocol methods count their calls and the records they return."""
    store = InMemoryStore()
    names = [n for n in vars(BeamStore) if not n.startswith("_") and callable(getattr(store, n, None))]
    for name in names:
        method = getattr(store, name)

        def wrapped(*args: Any, __method: Callable[..., Any] = method, **kwargs: Any) -> Any:
            result = __method(*args, **kwargs)
            meter.now.requests += 1
            meter.now.items += count_records(result)
            return result

        setattr(store, name, wrapped)
    return store


def attach_dynamodb_meter(client: Any, meter: Meter) -> None:
    def record(parsed: dict[str, Any], model: Any, **_: Any) -> None:
        read: list[dict[str, Any]] = []
        if "Items" in parsed:
            read = list(parsed["Items"])
        elif model.name == "GetItem" and parsed.get("Item"):
            read = [parsed["Item"]]
        elif model.name == "BatchGetItem":
            read = [item for items in parsed.get("Responses", {}).values() for item in items]
        elif model.name == "TransactGetItems":
            read = [r["Item"] for r in parsed.get("Responses", []) if r.get("Item")]
        meter.now.requests += 1
        meter.now.items += len(read)
        meter.now.bytes = (meter.now.bytes or 0) + sum(item_size(item) for item in read)

    client.meta.events.register("after-call.dynamodb", record)


@contextmanager
def open_store(kind: str, meter: Meter) -> Iterator[BeamStore]:
    if kind == "memory":
        yield counted_memory_store(meter)
        return
    import boto3
    from beam_store import DynamoBeamStore
    from beam_store.embedded import embedded_dynamodb

    os.environ.setdefault("AWS_ACCESS_KEY_ID", "bench")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "bench")
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    with embedded_dynamodb() as url:
        client = boto3.client("dynamodb", endpoint_url=url)
        store = DynamoBeamStore.connect(f"riverbeam-growth-{uuid.uuid4().hex[:8]}", client=client)
        meter.now.bytes = 0
        attach_dynamodb_meter(client, meter)
        yield store


class Recorder:
    """Each step's figures (the first time it is measured) and latencies."""

    def __init__(self, meter: Meter) -> None:
        self.meter = meter
        self.figures: dict[str, Figures] = {}
        self.latencies: dict[str, list[float]] = {step: [] for step in STEPS}

    def measure(self, step: str, call: Callable[[], Any]) -> Any:
        self.meter.take()
        started = time.perf_counter()
        result = call()
        self.latencies[step].append(time.perf_counter() - started)
        self.figures.setdefault(step, self.meter.take())
        return result


class Session:
    """One session driven through RiverBeam's public methods."""

    def __init__(self, beam: RiverBeam) -> None:
        self.beam = beam
        self.session_id = str(uuid.uuid4())
        self.turns = 0

    def _invoke_request(self) -> dict[str, Any]:
        return {
            "agent_name": "author",
            "session_id": self.session_id,
            "content": [{"type": "text", "text": "Push docs/x"}],
            "auth_context": USER,
        }

    def _resume_request(self, result: AgentResult) -> dict[str, Any]:
        return {
            "agent_name": "author",
            "session_id": self.session_id,
            "interaction_id": result.interaction_id,
            "actions": [{"action_id": result.action_required[0].action_id, "status": "submitted"}],
            "auth_context": USER,
        }

    def in_process(self, measure: Callable[[str, Callable[[], Any]], Any]) -> None:
        result = measure("invoke", lambda: self.beam.invoke(self._invoke_request()))
        assert isinstance(result, AgentResult) and result.interrupted, result
        measure("resume", lambda: self.beam.resume(self._resume_request(result)))
        self.turns += 1

    def split(self, measure: Callable[[str, Callable[[], Any]], Any]) -> None:
        job = measure("accept_invoke", lambda: self.beam.accept_invoke(self._invoke_request()))
        result = measure("run_job (invoke)", lambda: self.beam.run_job(job, worker_id="bench"))
        assert isinstance(result, AgentResult) and result.interrupted, result
        job = measure("accept_resume", lambda: self.beam.accept_resume(self._resume_request(result)))
        measure("run_job (resume)", lambda: self.beam.run_job(job, worker_id="bench"))
        self.turns += 1


def run(kind: str, turns: list[int], repeat: int) -> dict[str, dict[int, tuple[Figures, float]]]:
    """By step and count of prior turns: the first repetition's figures and the median latency."""
    meter = Meter()
    table: dict[str, dict[int, tuple[Figures, float]]] = {step: {} for step in STEPS}
    with open_store(kind, meter) as store:
        beam = RiverBeam(store)
        script = [ASK, DONE] * (max(turns) + 2 * repeat * len(turns) + 1)
        beam.register_agent("author", ToolAgentRunner(model=ScriptedModel(script), tools=[git_push]))
        session = Session(beam)

        def unmeasured(step: str, call: Callable[[], Any]) -> Any:
            return call()

        for target in turns:
            while session.turns < target:
                session.in_process(unmeasured)
            recorder = Recorder(meter)
            for _ in range(repeat):
                session.in_process(recorder.measure)
                session.split(recorder.measure)
            for step in STEPS:
                table[step][target] = (recorder.figures[step], statistics.median(recorder.latencies[step]))
    return table


def ratio(last: float | None, first: float | None) -> str:
    if last is None or first is None:
        return "-"
    return f"{last / first:.2f}" if first else "-"


def report(kind: str, table: dict[str, dict[int, tuple[Figures, float]]], repeat: int) -> None:
    turns = sorted(next(iter(table.values())))
    first, last = turns[0], turns[-1]
    if kind == "memory":
        print(f"\nInMemoryStore: store calls and the records they return (no DynamoDB); {repeat} repetitions")
        head = ("calls", "records", "", "ms")
    else:
        print(
            f"\nembedded server (DynamoBeamStore): DynamoDB requests, items and KB read; {repeat} repetitions"
        )
        head = ("requests", "items", "KB read", "ms")
    print(f"{'step':<18}{'turns':>6}{head[0]:>10}{head[1]:>9}{head[2]:>9}{head[3]:>10}")
    for step, rows in table.items():
        for n in turns:
            figures, seconds = rows[n]
            kb = "" if figures.bytes is None else f"{figures.bytes / 1024:.1f}"
            print(f"{step:<18}{n:>6}{figures.requests:>10}{figures.items:>9}{kb:>9}{seconds * 1000:>10.1f}")
        (a, sa), (b, sb) = rows[first], rows[last]
        kb_ratio = ratio(b.bytes, a.bytes) if kind != "memory" else ""
        print(
            f"{'':<18}{f'x {last}/{first}':>6}{ratio(b.requests, a.requests):>10}"
            f"{ratio(b.items, a.items):>9}{kb_ratio:>9}{ratio(sb, sa):>10}"
        )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=(__doc__ or "").splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--turns", default="1,10,100", help="counts of prior turns (default: %(default)s)")
    parser.add_argument(
        "--repeat", type=int, default=3, help="repetitions at each count (default: %(default)s)"
    )
    parser.add_argument(
        "--stores", default="memory,server", help="memory, server or both (default: %(default)s)"
    )
    args = parser.parse_args()
    turns = sorted({int(t) for t in args.turns.split(",")})
    stores = [s.strip() for s in args.stores.split(",") if s.strip()]
    if not turns or min(turns) < 0 or args.repeat < 1 or not set(stores) <= {"memory", "server"}:
        parser.error("--turns: counts >= 0; --repeat >= 1; --stores: memory and/or server")
    load = os.getloadavg()[0]
    print(
        f"step cost by prior turns (a turn: an invoke that interrupts and the resume approving it); "
        f"Python {sys.version.split()[0]}, {os.cpu_count()} cores, load {load:.2f}"
    )
    for kind in stores:
        started = time.perf_counter()
        table = run(kind, turns, args.repeat)
        report(kind, table, args.repeat)
        print(f"({time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

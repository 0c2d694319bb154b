"""Load the local stack: concurrent sessions of approval loops against `riverbeam dev`, with figures.

    .venv/bin/python bench/load.py                          # 50 sessions x 4 loops
    .venv/bin/python bench/load.py --sessions 2 --loops 1   # what CI runs

It starts `riverbeam dev` on --port (0: a free one) with a temp data dir, gives session n a branch
`docs/update-<n>` in the stack's work tree (a copy of docs/update), and runs every session at once. A session
runs its loops one after the other, each over real HTTP and WebSocket as a client would:

  subscribe to the session's frames (a new WebSocket), POST /invoke streamed "Push docs/update-<n>", wait for
  the run's `done` with the git_push action it asks for, POST /resume approving it, wait for that run's
  `done`, and close the WebSocket.

Figures: loops per second over the whole load; p50 and p99 latency from the invoke's POST to its `done` frame
and from the resume's POST to its `done` frame; errors (a refusal, an `error` frame, a tool that did not push,
a loop over --timeout); double runs (an action whose tool ran more than once, counted in the frames each loop
saw and in the sessions' stored messages: one tool_result per approved action); CPU time, in all and per loop,
of this client, the stack's process and its embedded AWS services' process; the requests those answered, per
loop by operation (from the line their process logs as it stops; the stack's setup is in them too: a few).
The DynamoDB capacity a loop costs is bench/store_calls.py's (moto reports placeholder units). The conditions
(date, cores, load average, Python, the stack's data store) come first. Exit status 1 when there was an error
or a double run. The stack is stopped by its pid at the end, on Ctrl-C (exit 130) and on failure; the data dir
goes too.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import platform
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType

from riverbeam.agent.workspace import prepare_workspace
from riverbeam_local.clients import dev_process
from riverbeam_local.clients.client import ApiClient, ClientError, Json, response, websocket_url
from riverbeam_local.stack_secret import secret_in_url
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import WebSocketException

AGENT = "author"
# a loop on a loaded 2-core machine takes seconds; one that takes this long is counted as an error
DEFAULT_TIMEOUT_SECONDS = 300.0


@dataclass
class Figures:
    invoke_latencies: list[float] = field(default_factory=list)
    resume_latencies: list[float] = field(default_factory=list)
    # from a POST to its StreamAck (202): the HTTP handler's part of the latencies above
    ack_latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    # tool_result frames seen per approved action, and the actions each session approved
    frame_results: Counter[str] = field(default_factory=Counter)
    approved: dict[str, list[str]] = field(default_factory=dict)
    completed: int = 0
    cpu: str = ""


class LoopFailed(Exception):
    """A loop that went wrong, said in one line."""


@dataclass
class Session:
    index: int
    api: ApiClient
    secret: str
    session_id: str = field(default_factory=lambda: str(uuid.uuid4()))

    @property
    def branch(self) -> str:
        return f"docs/update-{self.index}"


async def until_done(socket: ClientConnection, run_id: str, seen: list[Json]) -> Json:
    """Read the session's frames into `seen` until the run's `done`; returns its Result."""
    async for message in socket:
        frame = json.loads(message)
        seen.append(frame)
        if frame.get("run_id") != run_id:
            continue
        if frame.get("type") == "error":
            raise LoopFailed(f"error frame {frame.get('code')}: {str(frame.get('message'))[:200]}")
        if frame.get("type") == "done":
            result: Json = frame["result"]
            return result
    raise LoopFailed("the WebSocket closed before the run's done frame")


async def approval_loop(session: Session, figures: Figures) -> None:
    """One loop of a session; its latencies and tool results go into `figures`."""
    api = session.api
    url = websocket_url(api.url, session.session_id, api.user, session.secret)
    seen: list[Json] = []
    async with connect(url, open_timeout=api.timeout, close_timeout=api.timeout) as socket:
        started = time.perf_counter()
        text = f"Push {session.branch}"
        ack = await asyncio.to_thread(api.invoke, text, session_id=session.session_id, agent=AGENT)
        acks = [time.perf_counter() - started]
        result = await until_done(socket, ack["run_id"], seen)
        invoked = time.perf_counter() - started
        actions = result.get("action_required") or []
        if [(a["tool"], a["args"]) for a in actions] != [("git_push", {"ref": session.branch})]:
            raise LoopFailed(f"the agent asked for {actions!r:.200}, not one git_push of {session.branch}")
        (action,) = actions
        started = time.perf_counter()
        ack = await asyncio.to_thread(api.resume, result, [response(action, approve=True)])
        acks.append(time.perf_counter() - started)
        await until_done(socket, ack["run_id"], seen)
        resumed = time.perf_counter() - started
    action_id = action["action_id"]
    outcomes = [f for f in seen if f.get("type") == "tool_result" and f.get("tool_call_id") == action_id]
    figures.frame_results[action_id] += len(outcomes)
    figures.approved.setdefault(session.session_id, []).append(action_id)
    if [f.get("status") for f in outcomes[:1]] != ["ok"]:
        raise LoopFailed(f"git_push of {session.branch} did not succeed: {outcomes[:1]!r:.300}")
    figures.invoke_latencies.append(invoked)
    figures.resume_latencies.append(resumed)
    figures.ack_latencies += acks
    figures.completed += 1


async def run_session(session: Session, loops: int, timeout: float, figures: Figures) -> None:
    for number in range(loops):
        try:
            async with asyncio.timeout(timeout):
                await approval_loop(session, figures)
        except TimeoutError:
            figures.errors.append(f"session {session.index} loop {number}: not done within {timeout:g} s")
        except (LoopFailed, ClientError, WebSocketException, OSError, KeyError, ValueError) as error:
            figures.errors.append(f"session {session.index} loop {number}: {type(error).__name__}: {error}")


async def load(sessions: Sequence[Session], loops: int, timeout: float, figures: Figures) -> float:
    """Every session at once; returns the wall time in seconds."""
    # one thread per session for its blocking HTTP requests (the default pool has cores + 4)
    asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(max_workers=len(sessions)))
    started = time.perf_counter()
    await asyncio.gather(*(run_session(s, loops, timeout, figures) for s in sessions))
    return time.perf_counter() - started


def stored_results(session: Session) -> Counter[str]:
    """tool_result parts per tool_call_id in the session's stored messages."""
    counted: Counter[str] = Counter()
    for message in session.api.get("messages", session.session_id)["messages"]:
        for part in message.get("content", []):
            if part.get("type") == "tool_result":
                counted[part.get("tool_call_id")] += 1
    return counted


def double_runs(sessions: Sequence[Session], figures: Figures) -> tuple[int, int]:
    """Actions whose tool ran more than once: in the frames the loops saw, and in the stored messages."""
    in_frames = sum(1 for count in figures.frame_results.values() if count > 1)
    in_records = 0
    for session in sessions:
        try:
            stored = stored_results(session)
        except ClientError as error:
            figures.errors.append(f"session {session.index}: its messages could not be read: {error}")
            continue
        for action_id in figures.approved.get(session.session_id, []):
            if stored[action_id] == 0:
                figures.errors.append(f"session {session.index}: no stored tool result for {action_id}")
            in_records += stored[action_id] > 1
    return in_frames, in_records


def make_branches(data_dir: Path, count: int) -> None:
    """Branch docs/update-<n> for each session in the work tree the stack's author pushes from."""
    work, _ = prepare_workspace(data_dir)
    for index in range(count):
        subprocess.run(
            ["git", "-C", str(work), "branch", "--quiet", f"docs/update-{index}", "docs/update"],
            check=True,
            capture_output=True,
            timeout=60,
        )


def percentile(values: Sequence[float], share: float) -> float:
    """The nearest-rank percentile (`share` 0-100) of `values`."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share / 100 * len(ordered)) - 1)]


def latency_line(name: str, values: Sequence[float]) -> str:
    if not values:
        return f"{name}: no loop completed"
    p50, p99 = percentile(values, 50), percentile(values, 99)
    return f"{name}: p50 {p50 * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms, max {max(values) * 1000:.0f} ms"


def load_average() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def conditions() -> str:
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return (
        f"conditions: {now}, {os.cpu_count()} cores, load average {load_average()} (1, 5, 15 min), "
        f"Python {platform.python_version()}, {platform.system()} {platform.release()}"
    )


def stop_on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt  # the same way out as Ctrl-C: the stack stopped, the data dir removed


def _cpu_seconds(pid: int) -> tuple[float, float] | None:
    """The CPU time (user + system) of `pid` and of its ended children, from /proc while it runs."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks, (int(fields[13]) + int(fields[14])) / ticks


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
        except (OSError, IndexError, ValueError):
            continue
    return found


def stack_cpu(pid: int, loops: int) -> str:
    """The CPU time the stack's process has used (HTTP, handlers, worker, stream tail), its embedded AWS
    services' process (moto, the door, the snapshots) and its ended children's (the git pushes), from /proc
    while it runs; each also per completed loop."""
    own = _cpu_seconds(pid)
    if own is None:
        return "the stack's CPU time: unknown"
    per = max(loops, 1)
    parts = [f"the stack's process {own[0]:.0f} s ({own[0] / per * 1000:.0f} ms a loop)"]
    for child in _children(pid):
        used = _cpu_seconds(child)
        if used is not None and used[0] > 0.5:  # the embedded AWS services (a git push ends in ms)
            parts.append(f"its embedded AWS process {used[0]:.0f} s ({used[0] / per * 1000:.0f} ms a loop)")
    parts.append(f"its git pushes {own[1]:.0f} s")
    return ", ".join(parts)


def client_cpu(loops: int) -> str:
    used = resource.getrusage(resource.RUSAGE_SELF)
    seconds = used.ru_utime + used.ru_stime
    return f"this client {seconds:.0f} s ({seconds / max(loops, 1) * 1000:.0f} ms a loop)"


def requests_line(stderr: str, loops: int) -> str:
    """The embedded AWS services' requests (the line their process logs as it stops), per loop too."""
    found = re.search(r"answered (\d+) requests: (.*)", stderr)
    if found is None:
        return "requests: not reported (no embedded AWS services)"
    per = max(loops, 1)
    counts = [part.rsplit(" ", 1) for part in found.group(2).split(", ") if " " in part]
    each = ", ".join(f"{name} {int(count) / per:.1f}" for name, count in counts[:12])
    total = int(found.group(1))
    return f"requests to the embedded AWS services: {total}, {total / per:.1f} a loop ({each})"


def report(figures: Figures, total: int, wall: float) -> None:
    rate = figures.completed / wall
    print(f"loops: {figures.completed} of {total} completed in {wall:.1f} s: {rate:.2f} loops/s")
    print(latency_line("invoke to done", figures.invoke_latencies))
    print(latency_line("resume to done", figures.resume_latencies))
    print(latency_line("POST to its 202 (invoke and resume)", figures.ack_latencies))
    for error in figures.errors[:10]:
        print(f"  error: {error[:300]}")
    print(f"errors: {len(figures.errors)}")


def drive(dev: dev_process.DevProcess, args: argparse.Namespace) -> tuple[Figures, float, tuple[int, int]]:
    """The load against a started stack: the figures, the wall time and the double runs (frames, records)."""
    print(
        f"stack: riverbeam dev (pid {dev.process.pid}) at {dev.http_url}/, the offline model; "
        f"DynamoDB {dev.urls.get('DynamoDB')}, SQS {dev.urls.get('SQS')}; data dir {dev.data_dir}",
        flush=True,
    )
    secret = secret_in_url(dev.urls.get("Inbox page", "")) or ""
    sessions = [
        Session(n, ApiClient(dev.http_url, f"bench-{n}", timeout=args.timeout, secret=secret), secret)
        for n in range(args.sessions)
    ]
    print(
        f"load: {args.sessions} sessions x {args.loops} loops at once (each loop: subscribe, streamed "
        f"invoke 'Push docs/update-<n>', done, resume approving the git_push, done)",
        flush=True,
    )
    figures = Figures()
    wall = asyncio.run(load(sessions, args.loops, args.timeout, figures))
    cpu = f"{client_cpu(figures.completed)}, {stack_cpu(dev.process.pid, figures.completed)}"
    figures.cpu = f"CPU time: {cpu}"
    return figures, wall, double_runs(sessions, figures)


def bench(args: argparse.Namespace, data_dir: Path) -> int:
    print(conditions(), flush=True)
    make_branches(data_dir, args.sessions)
    dev = dev_process.start(data_dir, port=args.port, args=("--model", "offline"))
    try:
        figures, wall, (in_frames, in_records) = drive(dev, args)
    finally:
        dev.stop()
    tracebacks = dev.stderr_text().count("Traceback")
    if tracebacks:
        figures.errors.append(f"the stack logged {tracebacks} tracebacks")
    doubles = max(in_frames, in_records)
    report(figures, args.sessions * args.loops, wall)
    print(f"double runs: {doubles} (in the frames: {in_frames}, in the stored messages: {in_records})")
    print(requests_line(dev.stderr_text(), figures.completed))
    print(f"load average at the end: {load_average()}; {figures.cpu}")
    return 0 if not figures.errors and doubles == 0 else 1


def parser() -> argparse.ArgumentParser:
    found = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__,
    )
    found.add_argument("--sessions", type=int, default=50, help="sessions at once (default: %(default)s)")
    found.add_argument("--loops", type=int, default=4, help="loops per session (default: %(default)s)")
    found.add_argument("--port", type=int, default=0, help="the stack's port (default: 0, a free one)")
    found.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT_SECONDS,
        help="seconds a loop may take before it counts as an error (default: %(default)s)",
    )
    return found


def main() -> int:
    args = parser().parse_args()
    if min(args.sessions, args.loops) < 1 or args.timeout <= 0 or not 0 <= args.port <= 65535:
        parser().error("--sessions and --loops must be at least 1, --timeout above 0, --port 0-65535")
    # Ctrl-C stops the bench even where it was started with SIGINT ignored (a background job of a script)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, stop_on_sigterm)
    try:
        with tempfile.TemporaryDirectory(prefix="riverbeam-load-", ignore_cleanup_errors=True) as tmp:
            return bench(args, Path(tmp))
    except KeyboardInterrupt:
        print("load: interrupted; the stack is stopped", file=sys.stderr)
        return 130
    except RuntimeError as error:  # the stack did not start: what it printed
        print(f"load: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

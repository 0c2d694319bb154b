"""`riverbeam demo`: the whole approval loop with no typing, through the local stack: `riverbeam dev` as a
child process, a streamed invoke over HTTP with its frames over the WebSocket, an approval that pushes
docs/update to the bare remote, a refusal that pushes nothing, then the stack stopped. It ends with a short
run on the example approval policy (a second stack, `--agents docs/examples/policy/agents.yaml`): a docs push
the policy lets run unasked beside one that asks."""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import tempfile
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from ..display import visible
from ..stack_secret import secret_in_url
from . import dev_process as process
from .client import ApiClient, ClientError, Json, response
from .subscription import Subscription
from .view import View

USER = "demo"
REASON = "not before the release"
# the example approval policy's agents file, in a clone (docs/ is not installed with the package)
POLICY_AGENTS = Path(__file__).resolve().parents[3] / "docs" / "examples" / "policy" / "agents.yaml"


def parser() -> argparse.ArgumentParser:
    found = argparse.ArgumentParser(
        prog="riverbeam demo",
        description="Start the local stack, ask the author agent to push two branches, approve one and "
        "refuse the other, show what reached the bare remote, and stop the stack.",
    )
    found.add_argument(
        "--data-dir",
        type=Path,
        help="where the stack keeps its records, work tree and remote (default: a temp dir)",
    )
    return found


def data_dir_problem(path: Path) -> str | None:
    """Why `path` cannot hold the demo's files (it is a file, or cannot be made or written), or None."""
    if path.exists() and not path.is_dir():
        return f"the data dir {path} is not a directory"
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as error:
        return f"the data dir {path} cannot be used: {error.strerror or error}"
    return None


def remote_branches(data_dir: Path) -> dict[str, str]:
    """The bare remote's branches, each with its last commit as `1a2b3c4 Subject`."""
    out = subprocess.run(
        [
            "git",
            "-C",
            str(data_dir / "remote.git"),
            "for-each-ref",
            "refs/heads",
            "--format=%(refname:short) %(objectname:short) %(contents:subject)",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    return dict(line.split(" ", 1) for line in out.splitlines())


class Demo:
    def __init__(self, api: ApiClient, data_dir: Path, view: View) -> None:
        self.api = api
        self.data_dir = data_dir
        self.view = view
        self.session_id = str(uuid.uuid4())

    async def run(self) -> bool:
        """The two asks; True when only the approved branch reached the remote."""
        async with Subscription(self.api, self.session_id) as subscription:
            self.subscription = subscription
            await self.ask("Push docs/update", approve=True)
            self.show_remote("docs/update")
            await self.ask("Push main", approve=False)
            self.show_remote("main")
        return list(remote_branches(self.data_dir)) == ["docs/update"]

    async def run_on_policy(self) -> bool:
        """On the example policy: docs/* runs unasked, any other push asks; True when both landed."""
        async with Subscription(self.api, self.session_id) as subscription:
            self.subscription = subscription
            await self.ask("Push docs/update", approve=True)
            self.show_remote("docs/update")
            await self.ask("Push main", approve=True)
            self.show_remote("main")
        return sorted(remote_branches(self.data_dir)) == ["docs/update", "main"]

    async def ask(self, text: str, approve: bool) -> None:
        self.view.line("you", text, ">")
        ack = await asyncio.to_thread(self.api.invoke, text, session_id=self.session_id)
        result = await self.show_run(ack["run_id"])
        for action in result["action_required"]:
            answer = response(action, approve, None if approve else REASON)
            self.view.line(
                "approved" if approve else "rejected", action["tool"] + ("" if approve else f": {REASON}")
            )
            await self.show_run((await asyncio.to_thread(self.api.resume, result, [answer]))["run_id"])

    async def show_run(self, run_id: str) -> Json:
        result: Json = {}
        async for frame in self.subscription.follow(run_id):
            self.view.frame(frame, "author")
            result = frame.get("result") or result
        return result

    def show_remote(self, branch: str) -> None:
        branches = remote_branches(self.data_dir)
        if branch in branches:
            self.view.line("remote", f"{branch} -> {branches[branch]}")
        else:
            has = ", ".join(branches) or "no branch"
            self.view.line("remote", f"{branch} not pushed (the remote has {has})")


def _start(data_dir: Path, args: tuple[str, ...] = ()) -> process.DevProcess:
    """`riverbeam dev` on a free port; started in a thread so that a Ctrl-C while it starts still finds
    the process to stop."""
    pool = ThreadPoolExecutor(1)
    started: Future[process.DevProcess] = pool.submit(process.start, data_dir, args=args)
    try:
        return started.result()
    except KeyboardInterrupt:
        started.add_done_callback(lambda f: f.exception() is None and f.result().stop())
        raise
    finally:
        pool.shutdown(wait=False)


def on_stack(data_dir: Path, view: View, args: tuple[str, ...] = ()) -> bool | int:
    """One stack started, its part of the demo run, the stack stopped: whether it went as it should, or
    the exit code of a failure already said."""
    command = " ".join(("riverbeam dev", *args))
    view.line("stack", f"starting {command} (data dir {data_dir})")
    try:
        dev = _start(data_dir, args)
    except RuntimeError as error:
        return _fail(str(error).strip().splitlines()[-1], 1)
    try:
        view.line("stack", f"HTTP API {dev.http_url}/, WebSocket API {dev.websocket_url}")
        # the stack's secret, from the page's URL it printed
        api = ApiClient(dev.http_url, USER, secret=secret_in_url(dev.urls.get("Inbox page", "")))
        demo = Demo(api, data_dir, view)
        ok = asyncio.run(demo.run_on_policy() if args else demo.run())
    except ClientError as error:
        return _fail(error.line(), 1)
    finally:
        dev.stop()
    view.line("stack", "stopped")
    return ok


def demo(data_dir: Path) -> int:
    view = View()
    first = on_stack(data_dir, view)
    if first is not True:
        return 1 if first is False else first
    if not POLICY_AGENTS.is_file():  # an install without the clone's docs: the policy part is left out
        view.line("note", "the example policy is not here (docs/examples/policy/): its part is left out")
        return 0
    view.line("policy", f"the author again, with an approval policy: {POLICY_AGENTS.parent / 'author.cedar'}")
    second = on_stack(data_dir / "with-policy", view, ("--agents", str(POLICY_AGENTS)))
    return 0 if second is True else (1 if second is False else second)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        if args.data_dir is not None:
            problem = data_dir_problem(args.data_dir)
            return _fail(problem, 2) if problem else demo(args.data_dir.absolute())
        with tempfile.TemporaryDirectory(prefix="riverbeam-demo-", ignore_cleanup_errors=True) as tmp:
            return demo(Path(tmp))
    except KeyboardInterrupt:
        return _fail("interrupted", 130)
    except (OSError, subprocess.SubprocessError) as error:  # a disk that filled up, git gone: one line
        return _fail(str(error), 1)


def _fail(message: str, code: int) -> int:
    print(f"riverbeam demo: {visible(message)}", file=sys.stderr)
    return code

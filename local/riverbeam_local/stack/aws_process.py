"""The stack's embedded AWS services (services.EmbeddedAws: moto behind the stack's door) in a process of
their own, so that moto's work and the handlers' run on two cores, not one; the snapshots of its records are
taken in it too (they read moto's backends under its lock), into the data dir as before.

The stack starts it (`AwsProcess`) and sends its settings on its stdin, one JSON line each: first the stack's
key, later where to keep the snapshots. It prints its URL once it listens, then one byte on stdout after each
request that may write (`c`) and each message sent (`s`): the stack's stream tail and queue poller wake on
them. It stops on SIGTERM (the stack sends it by its pid when it stops) and when its stdin closes (the stack
has gone, however it ended: no orphan); either way it stops serving, then takes its last snapshot. It ignores
SIGINT: Ctrl-C reaches the whole process group, and the stack stops its handlers before this process.

    python -m riverbeam_local.stack.aws_process --data-dir DIR   # what AwsProcess runs
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from .aws_key import StackKey

log = logging.getLogger("riverbeam_local")
START_SECONDS = 120.0  # moto's imports on a loaded machine take seconds
# the last snapshot of a large table takes a while; a process that does not end by then is killed
STOP_SECONDS = 60.0
_CHANGED, _SENT = b"c", b"s"


class AwsProcess:
    """The child process, started at once; `on_change` and `on_send` run on a thread of this process as the
    child reports writes and messages sent. Call `stop` (an ExitStack callback) whatever happens next."""

    def __init__(
        self, key: StackKey, data_dir: Path, on_change: Callable[[], None], on_send: Callable[[], None]
    ) -> None:
        # the data dir on its command line: the stack's, found as such (by `ps`, by the tests' checks)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "riverbeam_local.stack.aws_process", "--data-dir", str(data_dir)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        assert self.process.stdin is not None and self.process.stdout is not None
        self._stdin, stdout = self.process.stdin, self.process.stdout
        self._send({"access_key_id": key.access_key_id, "secret_access_key": key.secret_access_key})
        lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=lambda: lines.put(stdout.readline()), daemon=True).start()
        try:
            url = lines.get(timeout=START_SECONDS).decode().strip()
        except queue.Empty:
            url = ""
        if not url.startswith("http://127.0.0.1:"):
            self.stop()
            raise OSError(f"the embedded AWS services did not start (they said {url!r})")
        self.url = url
        notices = threading.Thread(
            target=_read_notices, args=(stdout, on_change, on_send), name="embedded-aws-notices", daemon=True
        )
        notices.start()

    def _send(self, settings: dict[str, Any]) -> None:
        self._stdin.write(json.dumps(settings).encode() + b"\n")
        self._stdin.flush()

    def keep_snapshots(
        self, path: Path, table_name: str, queue_names: dict[str, str], bucket: str | None, interval: float
    ) -> None:
        """Snapshots of the table, the queues (role -> name) and the bucket's objects (None: not embedded)
        kept at `path`, every `interval` seconds after a change and once more when the process stops."""
        self._send(
            {
                "snapshots": str(path),
                "table_name": table_name,
                "queue_names": queue_names,
                "bucket": bucket,
                "interval": interval,
            }
        )

    def stop(self) -> None:
        """SIGTERM by its pid; killed if it has not ended after its last snapshot's time."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=STOP_SECONDS)
            except subprocess.TimeoutExpired:
                log.error("the embedded AWS process %d did not stop; killed", self.process.pid)
                self.process.kill()
                self.process.wait(timeout=STOP_SECONDS)
        self._stdin.close()


def _read_notices(stdout: IO[bytes], on_change: Callable[[], None], on_send: Callable[[], None]) -> None:
    while chunk := stdout.read1(4096):  # type: ignore[attr-defined]
        if _CHANGED in chunk:
            on_change()
        if _SENT in chunk:
            on_send()


def _notify(byte: bytes) -> None:
    """One byte to the stack; dropped when the pipe is full (the stack has wake-ups to read already)."""
    with contextlib.suppress(BlockingIOError, BrokenPipeError):
        os.write(1, byte)


def _snapshotter(settings: dict[str, Any], lock: threading.Lock, changed: threading.Event) -> Any:
    from . import snapshot

    path = Path(settings["snapshots"])
    snapshots = snapshot.Snapshotter(
        path,
        lock,
        settings["table_name"],
        settings["queue_names"],
        changed=changed,
        interval=settings["interval"],
    )
    if settings.get("bucket"):
        snapshots.keep_objects(settings["bucket"], path.parent / snapshot.CONTENT_DIR)
    snapshots.start()
    return snapshots


def main(argv: list[str] | None = None) -> None:
    from .dev_command import StackFormatter
    from .services import EmbeddedAws

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", required=True, help="the stack's (names this process as the stack's)")
    parser.parse_args(argv)

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the stack stops this process itself, after its handlers
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(StackFormatter(tracebacks=True))
    logging.getLogger().addHandler(handler)
    log.setLevel(logging.INFO)
    key = StackKey(**json.loads(sys.stdin.readline()))
    changed, stopping = threading.Event(), threading.Event()

    def on_change() -> None:
        changed.set()
        _notify(_CHANGED)

    aws = EmbeddedAws(key, on_change=on_change, on_send=lambda: _notify(_SENT))
    aws.start()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    snapshots: list[Any] = []

    def commands() -> None:
        for line in sys.stdin:  # until the stack closes it, however it ends
            snapshots.append(_snapshotter(json.loads(line), aws.lock, changed))
        stopping.set()

    print(aws.url, flush=True)
    os.set_blocking(1, False)  # a stack that stops reading must not stop the server
    threading.Thread(target=commands, name="commands", daemon=True).start()
    while not stopping.wait(1.0):
        pass
    aws.stop()
    log.info("%s", aws.requests_line())
    for kept in snapshots:  # every request answered: the last snapshot misses none
        kept.stop()


if __name__ == "__main__":
    main()

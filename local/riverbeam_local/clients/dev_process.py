"""`riverbeam dev` as a child process, for tests and for tools that drive the stack (the demo): started on
a port (0: a free one), ready once it printed its URLs, stopped with SIGTERM and waited for."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

START_TIMEOUT_SECONDS = 120.0
STOP_TIMEOUT_SECONDS = 60.0


@dataclass
class DevProcess:
    process: subprocess.Popen[str]
    data_dir: Path
    stdout: list[str] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)
    urls: dict[str, str] = field(default_factory=dict)

    @property
    def http_url(self) -> str:
        return self.urls["HTTP API"].rstrip("/")

    @property
    def websocket_url(self) -> str:
        return self.urls["WebSocket API"]

    def stderr_text(self) -> str:
        return "".join(self.stderr)

    def stop(self, timeout: float = STOP_TIMEOUT_SECONDS, sig: int = signal.SIGTERM) -> int:
        """`sig` (SIGTERM; SIGINT is Ctrl-C), then wait; killed if it outlives `timeout`. Returns its exit
        code."""
        if self.process.poll() is None:
            self.process.send_signal(sig)
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=timeout)
            raise


def _pump(stream: object, lines: list[str], ready: threading.Event | None) -> None:
    for line in stream:  # type: ignore[attr-defined]
        lines.append(line)
        if ready is not None and line.startswith("Ready"):
            ready.set()
    if ready is not None:
        ready.set()  # the process ended before it was ready


def start(
    data_dir: Path,
    *,
    port: int = 0,
    env: dict[str, str] | None = None,
    timeout: float = START_TIMEOUT_SECONDS,
    args: tuple[str, ...] = (),
) -> DevProcess:
    """Start `riverbeam dev` and wait until it is ready; on failure the process is stopped and the error
    names what it printed."""
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "riverbeam_local",
            "dev",
            "--port",
            str(port),
            "--data-dir",
            str(data_dir),
            *args,
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
    )
    dev = DevProcess(process, data_dir)
    ready = threading.Event()
    # both pipes are read all along, so a chatty server never blocks on a full pipe
    threading.Thread(target=_pump, args=(process.stdout, dev.stdout, ready), daemon=True).start()
    threading.Thread(target=_pump, args=(process.stderr, dev.stderr, None), daemon=True).start()
    deadline = time.monotonic() + timeout
    try:
        ready.wait(timeout)
    except BaseException:  # interrupted while it starts: leave no stack behind
        dev.stop()
        raise
    if not any(line.startswith("Ready") for line in dev.stdout):
        code = process.poll()
        if code is None:
            dev.stop()
        while time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.05)
        raise RuntimeError(
            f"riverbeam dev did not start (exit {process.poll()}): {''.join(dev.stdout)}{dev.stderr_text()}"
        )
    for line in dev.stdout:
        name, sep, value = line.partition(":")
        if sep and value.strip():
            dev.urls[name.strip()] = value.strip()
    return dev


@contextmanager
def running(
    data_dir: Path, *, port: int = 0, env: dict[str, str] | None = None, args: tuple[str, ...] = ()
) -> Iterator[DevProcess]:
    dev = start(data_dir, port=port, env=env, args=args)
    try:
        yield dev
    finally:
        dev.stop()

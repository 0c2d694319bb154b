"""Start and stop the embedded DynamoDB-compatible server (serialized moto) for real-server tests."""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

START_TIMEOUT_SECONDS = 30


@contextmanager
def embedded_dynamodb() -> Iterator[str]:
    """Yields the server's URL on 127.0.0.1; the server is stopped on exit."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "beam_store.embedded", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    lines: queue.Queue[str] = queue.Queue()
    assert proc.stdout is not None
    stdout = proc.stdout
    threading.Thread(target=lambda: lines.put(stdout.readline()), daemon=True).start()
    try:
        url = lines.get(timeout=START_TIMEOUT_SECONDS).strip()
        if not url.startswith("http://127.0.0.1:"):
            raise RuntimeError(f"embedded DynamoDB did not start (said {url!r})")
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)

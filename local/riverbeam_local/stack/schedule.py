"""The template's scheduled functions (the sweep: a `Schedule` event in template.yaml), called every
`interval` seconds with an EventBridge scheduled event, as the deployment's schedule calls them."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any

from ..lambda_like import scheduled_event
from .functions import FUNCTION_PREFIX
from .template import Function

log = logging.getLogger("riverbeam_local")


class Scheduler:
    """Calls each scheduled function every `interval` seconds, on a thread of its own, until stopped; a
    call that fails is logged and the next one comes on time."""

    def __init__(
        self, call: Callable[[Function, dict[str, Any]], Any], functions: Sequence[Function], interval: float
    ) -> None:
        self._call = call
        self._functions = list(functions)
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="scheduler", daemon=True)

    def start(self) -> None:
        if self._functions:
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=60)

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            for function in self._functions:
                try:
                    answer = self._call(function, scheduled_event(FUNCTION_PREFIX + function.name))
                except Exception:
                    log.exception("%s failed", function.name)
                    continue
                expired = answer.get("expired") if isinstance(answer, dict) else None
                if expired:
                    log.info("sweep expired %d action(s): %s", len(expired), " ".join(expired))

"""A process that dies mid-step, as a Lambda that times out or a killed worker does: no handler of the
pipeline runs after it (a runner's or a tool's SystemExit is an outcome the pipeline sees; this is not)."""

from __future__ import annotations

from typing import Any

import pytest
from riverbeam.pipeline import writes


class ProcessDied(SystemExit):
    """The process ending: raised past the pipeline's handlers, as nothing is when a process is killed."""


def die_before_the_closing_write(monkeypatch: pytest.MonkeyPatch, message: str) -> list[str]:
    """The next step's closing write never happens: the process ends after its agent (and tools) ran.
    Later closes (the next worker's, after the lease) go through. Returns the runs that died."""
    close = writes.close
    died: list[str] = []

    def dying_close(store: Any, step: Any, *args: Any, **kwargs: Any) -> Any:
        if not died:
            died.append(step.run.run_id)
            raise ProcessDied(message)
        return close(store, step, *args, **kwargs)

    monkeypatch.setattr(writes, "close", dying_close)
    return died

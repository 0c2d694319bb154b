"""A Lambda function's init with the garbage collector paused.

A function's imports (boto3, pydantic, Powertools, the pipeline) make some 100,000 objects and next to no
garbage, yet the collector runs over them hundreds of times as they are made: measured on python3.12 by
bench/cold_start.py, that is 50-80 ms of a 700 ms init. What init makes lives as long as the container, so
once it is done, in Lambda, it is frozen (gc.freeze: no later collection looks at it again, and the first
one after init need not go through all of it) and the collector runs again as usual. Elsewhere (tests, the
local stack, which load a function many times in one process) it is not frozen: a freeze would keep for
good whatever garbage the process had not collected yet."""

import gc
import os
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def init_without_gc() -> Iterator[None]:
    """Pause the collector for the block (a function's imports); in Lambda, freeze what it made if it
    succeeds. An init that fails leaves the collector as it found it."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
        if "AWS_LAMBDA_FUNCTION_NAME" in os.environ:
            gc.freeze()
    finally:
        if enabled:
            gc.enable()

"""How Lambda calls a function: its handler loaded from the module's file, and the context it is handed
(the function's name and ARN, the request's id, the time left before the function's timeout)."""

from __future__ import annotations

import importlib.util
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

ACCOUNT_ID = "123456789012"
REGION = "us-east-1"

Handler = Callable[[dict[str, Any], Any], Any]


def load_handler(module_file: Path, module_name: str, attribute: str = "lambda_handler") -> Handler:
    """The handler `attribute` of the module at `module_file`, executed as Lambda loads it: by its file,
    not as part of a package. Every function's file is app.py: each needs a `module_name` of its own."""
    spec = importlib.util.spec_from_file_location(module_name, module_file)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {module_file}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    handler: Handler = getattr(module, attribute)
    return handler


class LambdaContext:
    """What the Lambda runtime passes as `context`: the remaining time counts down from the function's
    timeout, from when the context was made (the invocation's start)."""

    def __init__(self, function_name: str, timeout_seconds: float, *, log_stream_name: str = "local") -> None:
        self.function_name = function_name
        self.function_version = "$LATEST"
        self.memory_limit_in_mb = 512
        self.invoked_function_arn = f"arn:aws:lambda:{REGION}:{ACCOUNT_ID}:function:{function_name}"
        self.aws_request_id = str(uuid.uuid4())
        self.log_group_name = f"/aws/lambda/{function_name}"
        self.log_stream_name = log_stream_name
        self._deadline = time.monotonic() + timeout_seconds

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))

"""The template's functions, loaded as Lambda loads them (each handler module by its file) and called with
a Lambda context whose remaining time counts down from the function's timeout."""

from __future__ import annotations

from typing import Any

from ..lambda_like import Handler, LambdaContext, load_handler
from .template import Function

FUNCTION_PREFIX = "riverbeam-local-"


def _load(function: Function) -> Handler:
    # one module name per function: every handler file is called app.py
    return load_handler(function.module_file, f"riverbeam_local_function_{function.name}", function.attribute)


class Functions:
    def __init__(self, functions: dict[str, Function]) -> None:
        self._handlers = {name: _load(f) for name, f in functions.items()}

    def call(self, function: Function, event: dict[str, Any]) -> Any:
        """Blocking: call it from a worker thread, never on the event loop."""
        context = LambdaContext(FUNCTION_PREFIX + function.name, function.timeout_seconds)
        return self._handlers[function.name](event, context)

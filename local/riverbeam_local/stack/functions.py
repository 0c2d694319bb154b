"""The template's functions, loaded as Lambda loads them (each handler module by its file) and called with
a Lambda context whose remaining time counts down from the function's timeout."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Any

from ..lambda_like import LambdaContext
from .template import Function

Handler = Callable[[dict[str, Any], Any], Any]


def _load(function: Function) -> Handler:
    # one module name per function: every handler file is called app.py
    spec = importlib.util.spec_from_file_location(
        f"riverbeam_local_function_{function.name}", function.module_file
    )
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {function.module_file}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    handler: Handler = getattr(module, function.attribute)
    return handler


class Functions:
    def __init__(self, functions: dict[str, Function]) -> None:
        self._handlers = {name: _load(f) for name, f in functions.items()}

    def call(self, function: Function, event: dict[str, Any]) -> Any:
        """Blocking: call it from a worker thread, never on the event loop."""
        return self._handlers[function.name](event, LambdaContext(function.name, function.timeout_seconds))

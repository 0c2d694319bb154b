"""What every handler does around its one call: logs with correlation ids, a trace, metrics."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from . import runtime
from .runtime import logger, metrics

Handler = Callable[[dict[str, Any], LambdaContext], dict[str, Any]]
# API Gateway's request id, in HTTP and WebSocket events alike
REQUEST_ID_PATH = "requestContext.requestId"


def lambda_entry(*, correlation_id_path: str | None = REQUEST_ID_PATH) -> Callable[[Handler], Handler]:
    def wrap(handler: Handler) -> Handler:
        # Powertools' Tracer (and the X-Ray SDK it imports) only where detailed tracing is switched on
        traced = runtime.tracer().capture_lambda_handler(handler) if runtime.detailed_tracing() else handler
        measured = metrics.log_metrics(traced, capture_cold_start_metric=True)
        logged: Handler = logger.inject_lambda_context(
            measured, correlation_id_path=correlation_id_path, clear_state=True
        )
        return logged

    return wrap


def is_websocket(event: dict[str, Any]) -> bool:
    return "connectionId" in (event.get("requestContext") or {})

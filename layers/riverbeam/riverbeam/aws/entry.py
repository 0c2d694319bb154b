"""What every handler does around its one call: logs with correlation ids, metrics. Traces are
OpenTelemetry's: ADOT's layer, where the deployment adds it, traces each invocation, and the pipeline's spans
(riverbeam.telemetry) join it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from .runtime import logger, metrics

Handler = Callable[[dict[str, Any], LambdaContext], dict[str, Any]]
# API Gateway's request id, in HTTP and WebSocket events alike
REQUEST_ID_PATH = "requestContext.requestId"


def lambda_entry(*, correlation_id_path: str | None = REQUEST_ID_PATH) -> Callable[[Handler], Handler]:
    def wrap(handler: Handler) -> Handler:
        measured = metrics.log_metrics(handler, capture_cold_start_metric=True)
        logged: Handler = logger.inject_lambda_context(
            measured, correlation_id_path=correlation_id_path, clear_state=True
        )
        return logged

    return wrap


def is_websocket(event: dict[str, Any]) -> bool:
    return "connectionId" in (event.get("requestContext") or {})

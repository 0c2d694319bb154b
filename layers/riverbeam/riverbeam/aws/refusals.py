"""The one place a refusal becomes the contract's error JSON (CONTRACT 5), for HTTP and WebSocket alike:
`{"error": {"code", "message", "request_id"}}` with the code's status; anything that is not a refusal is
BEM-500, its details kept in the log, never in the answer. The pipeline raises unknown errors as they are:
this is where the edges (the routes, the WebSocket handlers, the worker) make them BEM-500."""

from __future__ import annotations

from ..errors import BeamError
from . import runtime


def as_refusal(error: Exception) -> BeamError:
    if isinstance(error, BeamError):
        return error
    runtime.logger.exception("internal error")
    return BeamError("BEM-500")


def answer(error: Exception, request_id: str | None) -> tuple[int, str]:
    """The status and JSON body that answer `error`."""
    refusal = as_refusal(error)
    runtime.logger.info("request refused", extra={"code": refusal.code, "field": refusal.field})
    return refusal.status, refusal.to_response(request_id).model_dump_json()

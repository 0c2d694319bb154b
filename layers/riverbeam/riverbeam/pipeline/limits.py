"""What one request may carry, checked before anything is written (BEM-002, 413, naming the limit).

Each limit keeps what a request stores under DynamoDB's 400 KB item (the input message, an action's
response, the session's owner) and what it queues under the queue's 1 MiB message. Sizes are counted as
the JSON that is stored or sent (UTF-8, compact), not as the text alone: 100,000 empty parts are small
text but a large item."""

from __future__ import annotations

import json
from typing import Any

from ..args_limits import MAX_ARGS_BYTES, check_args_depth
from ..errors import BeamError

MAX_BODY_BYTES = 1024 * 1024
MAX_CONTENT_PARTS = 100
MAX_CONTENT_BYTES = 256 * 1024
MAX_REASON_BYTES = 4 * 1024
MAX_IDENTITY_BYTES = 1024


def json_size(value: Any) -> int:
    """The bytes of `value` as compact JSON, UTF-8."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())


def over_limit(field: str, what: str, size: int, limit: int, unit: str = "bytes") -> BeamError:
    return BeamError("BEM-002", f"{field}: {what} is {size} {unit}; the limit is {limit} {unit}", field=field)


def check_body_size(size: int) -> None:
    if size > MAX_BODY_BYTES:
        raise over_limit("body", "the body", size, MAX_BODY_BYTES)


def _check_bytes(field: str, value: Any, limit: int) -> None:
    size = json_size(value)
    if size > limit:
        raise over_limit(field, "its JSON", size, limit)


def _check_content(content: list[Any], field: str) -> None:
    if len(content) > MAX_CONTENT_PARTS:
        raise over_limit(field, "the part count", len(content), MAX_CONTENT_PARTS, "parts")
    _check_bytes(field, content, MAX_CONTENT_BYTES)


def _check_identity(auth_context: dict[str, Any]) -> None:
    for name in ("user_id", "profile_id"):
        value = auth_context.get(name)
        if isinstance(value, str) and len(value.encode()) > MAX_IDENTITY_BYTES:
            raise over_limit(f"auth_context.{name}", "it", len(value.encode()), MAX_IDENTITY_BYTES)


def _check_response(response: dict[str, Any], field: str) -> None:
    payload = response.get("payload")
    # args nested too deep are BEM-045 (400) before their size is counted (counting them would recurse)
    if isinstance(payload, dict) and "args" in payload:
        check_args_depth(f"{field}.payload.args", payload["args"])
        _check_bytes(f"{field}.payload.args", payload["args"], MAX_ARGS_BYTES)
    if "edited_args" in response:
        check_args_depth(f"{field}.edited_args", response["edited_args"])
        _check_bytes(f"{field}.edited_args", response["edited_args"], MAX_ARGS_BYTES)
    if isinstance(response.get("reason"), str):
        _check_bytes(f"{field}.reason", response["reason"], MAX_REASON_BYTES)


def check_request(body: dict[str, Any]) -> None:
    """Refuse a body whose stored or queued form would be too large, or whose args nest too deep (BEM-045),
    whatever else is wrong with it."""
    content = body.get("content")
    if isinstance(content, list):
        _check_content(content, "content")
    if isinstance(body.get("auth_context"), dict):
        _check_identity(body["auth_context"])
    actions = body.get("actions")
    for i, response in enumerate(actions if isinstance(actions, list) else []):
        if isinstance(response, dict):
            _check_response(response, f"actions.{i}")

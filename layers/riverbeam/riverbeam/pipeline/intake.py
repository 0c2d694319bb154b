"""A request body in: JSON text or a dict -> a checked `Body` -> a request model, else a refusal.

A body is parsed and checked once: a `Body` is the checked dict, passed on as it is, and a field an adapter
sets on it (the caller it decided on) is checked alone, its size kept exact without serializing the rest
again. BEM-001 names the first offending field and lists a few problems with a count of the rest, so that
a body with 200,000 bad keys still gets a short answer; BEM-002 refuses a body over a limit (limits.py)."""

from __future__ import annotations

import base64
import binascii
import json
import uuid
from collections.abc import Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from ..errors import BeamError, clip
from . import limits

R = TypeVar("R", bound=BaseModel)
# problems listed in a BEM-001 message; the rest are counted
MAX_PROBLEMS_LISTED = 5
MAX_PROBLEM_CHARS = 200


def field_path(loc: Sequence[int | str], prefix: str | None = None) -> str | None:
    """A pydantic location as the request's dotted field name (`actions.0.status`)."""
    parts = [prefix] if prefix else []
    parts += [str(p) for p in loc]
    return ".".join(parts) or None


def invalid(problems: Sequence[tuple[str | None, str]]) -> BeamError:
    """BEM-001 for (field, problem) pairs: the first few listed, the rest counted, the first field named."""
    listed = [
        f"{clip(where or 'body', MAX_PROBLEM_CHARS)}: {clip(what, MAX_PROBLEM_CHARS)}"
        for where, what in problems[:MAX_PROBLEMS_LISTED]
    ]
    more = len(problems) - len(listed)
    message = "invalid request: " + "; ".join(listed) + (f" (and {more} more problems)" if more else "")
    first = problems[0][0] if problems else None
    return BeamError("BEM-001", message, field=clip(first, MAX_PROBLEM_CHARS) if first else None)


def validation_refusal(error: ValidationError, prefix: str | None = None) -> BeamError:
    details: list[ErrorDetails] = error.errors(include_url=False, include_input=False)
    return invalid([(field_path(e["loc"], prefix), e["msg"]) for e in details])


def decoded_body(body: str | None, *, base64_encoded: bool) -> str | bytes:
    """The body as the client sent it, where the transport base64-encoded it (API Gateway does so for a
    body it takes for binary); a body marked base64 that is not is BEM-001."""
    if not base64_encoded:
        return body or ""
    try:
        return base64.b64decode(body or "", validate=True)
    except (binascii.Error, ValueError):
        raise BeamError("BEM-001", "the body is marked base64 but is not base64") from None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


class Body(dict[str, Any]):
    """A request body that was parsed and checked; `size` is its bytes as JSON (as `parse_body` counts)."""

    size: int = 0


def _json_bytes(value: Any) -> int:
    try:  # what cannot be stored is refused here, not half-way through a step
        return len(json.dumps(value, ensure_ascii=False, allow_nan=False).encode())
    except (ValueError, TypeError, RecursionError):
        raise BeamError(
            "BEM-001", "the body holds values JSON cannot carry (NaN, Infinity, lone surrogates)"
        ) from None


def _checked(fields: dict[str, Any], size: int, check: dict[str, Any]) -> Body:
    limits.check_body_size(size)
    limits.check_request(check)
    body = Body(fields)
    body.size = size
    return body


def parse_body(body: Any) -> Body:
    """A request body (a dict, or JSON text) as a checked Body, else BEM-001; over a limit, BEM-002."""
    if isinstance(body, Body):
        return body
    if isinstance(body, str | bytes | bytearray):
        # counted before parsing: a huge body costs nothing more than its refusal
        limits.check_body_size(len(body))  # chars for text: a lower bound of its bytes
        try:
            body = json.loads(body, parse_constant=_no_constant)
        except (ValueError, RecursionError):
            raise BeamError("BEM-001", "the body is not JSON (or nests too deeply)") from None
    if not isinstance(body, dict):
        raise BeamError("BEM-001", "the body must be a JSON object")
    return _checked(body, _json_bytes(body), body)


def _entry_bytes(name: str, value: Any) -> int:
    """The bytes of `"name": value` inside a JSON object, as json.dumps writes it."""
    return _json_bytes({name: value}) - 2


def with_fields(body: Body, **fields: Any) -> Body:
    """`body` with `fields` set (None: removed), checked as `parse_body` would check the whole of it."""
    changed, size = dict(body), body.size
    for name, value in fields.items():
        if name in changed:  # ", " between entries: one fewer, or one more, as the entries change
            size -= _entry_bytes(name, changed.pop(name)) + (2 if changed else 0)
        if value is not None:
            size += _entry_bytes(name, value) + (2 if changed else 0)
            changed[name] = value
    return _checked(changed, size, {k: v for k, v in fields.items() if v is not None})


def parse_request(model: type[R], body: Any) -> R:
    if isinstance(body, model):
        return body
    try:
        return model.model_validate(parse_body(body))
    except ValidationError as error:
        raise validation_refusal(error) from None


def normal_uuid(value: str) -> str | None:
    """The id in the form records are stored under, or None when it is no UUID (so: not found). Here, not
    in checks.py, so that a read imports none of the resume checks."""
    try:
        return str(uuid.UUID(value))
    except (ValueError, TypeError, AttributeError):
        return None

"""How deep and how large a tool call's args may be, wherever they come from (the model's call, an
approver's edit, a response's payload): checked before they are stored, hashed or decided.

The depth is counted without recursion, so a structure nested 100,000 deep costs a walk, never a
RecursionError: json, pydantic's serializer (about 255 levels), Cedar's JSON (128) and the store all
recurse, and each of them failed somewhere under 300 levels before this bound."""

from __future__ import annotations

from typing import Any

from beam_store import canonical_json

from .errors import BeamError

# far deeper than any tool's schema nests; far under what json, pydantic, Cedar and the store reach
MAX_ARGS_DEPTH = 32
# the args as canonical JSON: an Action keeps them (and an edit beside them) in one 400 KB item
MAX_ARGS_BYTES = 64 * 1024


def depth_over(value: Any, limit: int) -> bool:
    """Whether `value` nests objects and arrays more than `limit` deep (the value itself is level 1)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def args_bytes(args: Any) -> int:
    """The bytes of `args` as canonical JSON (CONTRACT 1: what is hashed and stored); call it on args
    that passed the depth check."""
    return len(canonical_json(args).encode())


def too_deep(field: str) -> BeamError:
    return BeamError(
        "BEM-045",
        f"{field}: the args nest deeper than {MAX_ARGS_DEPTH} levels of objects and arrays",
        field=field,
    )


def check_args_depth(field: str, args: Any) -> None:
    """BEM-045 (400, `field` named) where `args` nest deeper than MAX_ARGS_DEPTH."""
    if depth_over(args, MAX_ARGS_DEPTH):
        raise too_deep(field)


def check_call_args(field: str, args: Any) -> None:
    """The bounds of a model's call: BEM-045 (400) too deep, else BEM-046 (413) over MAX_ARGS_BYTES."""
    check_args_depth(field, args)
    size = args_bytes(args)
    if size > MAX_ARGS_BYTES:
        raise BeamError(
            "BEM-046",
            f"{field}: the args are {size} bytes as JSON; the limit is {MAX_ARGS_BYTES} bytes",
            field=field,
        )

"""Tools an agent can call: `@tool` turns a typed function into one, its argument schema from the hints."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, get_type_hints, overload

from pydantic import BaseModel, ConfigDict, ValidationError, create_model
from pydantic_core import to_jsonable_python

from ..errors import BeamError, ToolError


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    func: Callable[..., Any]
    args_model: type[BaseModel]
    confirm_required: bool = False
    # whether the person who approves a call may edit its args
    editable: bool = True
    # seconds a person has to answer a call of it (None: the agent's time)
    expires_after: float | None = None

    def json_schema(self) -> dict[str, Any]:
        return self.args_model.model_json_schema()

    def problems(self, args: dict[str, Any]) -> list[tuple[str, str]]:
        """What in `args` does not fit the schema, as (dotted field, problem) pairs; none when it fits."""
        try:
            self.args_model.model_validate(args)
        except ValidationError as error:
            return [(".".join(str(p) for p in e["loc"]), e["msg"]) for e in error.errors()]
        return []

    def invoke(self, args: dict[str, Any]) -> Any:
        """Validate `args` against the schema, call the function, return its output as JSON-able data."""
        try:
            validated = self.args_model.model_validate(args)
        except ValidationError as error:
            fields = ", ".join(".".join(str(p) for p in e["loc"]) or "args" for e in error.errors())
            raise ToolError("BEM-332", f"{self.name}: invalid arguments ({fields})") from None
        kwargs = {name: getattr(validated, name) for name in type(validated).model_fields}
        try:
            return to_jsonable_python(self.func(**kwargs))
        except BeamError:
            raise
        except Exception as error:  # a tool's own failure is its outcome, not the run's
            raise ToolError("BEM-331", f"{self.name} failed: {type(error).__name__}: {error}") from error


def _args_model(func: Callable[..., Any], name: str) -> type[BaseModel]:
    hints = get_type_hints(func)
    fields: dict[str, Any] = {}
    for param in inspect.signature(func).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"tool {name}: *args and **kwargs have no schema")
        annotation = hints.get(param.name, Any)
        default = ... if param.default is param.empty else param.default
        fields[param.name] = (annotation, default)
    model_name = "".join(part.capitalize() for part in name.split("_")) + "Args"
    # built by its first use (a call, an edit's check, the schema sent to the model), not when an agent is
    # registered: a request that only checks and queues (an invoke's, a resume's) never builds it
    return create_model(model_name, __config__=ConfigDict(extra="forbid", defer_build=True), **fields)


def make_tool(
    func: Callable[..., Any],
    *,
    name: str | None = None,
    confirm_required: bool = False,
    editable: bool = True,
    expires_after: float | None = None,
) -> Tool:
    tool_name = name or func.__name__
    return Tool(
        name=tool_name,
        description=inspect.getdoc(func) or "",
        func=func,
        args_model=_args_model(func, tool_name),
        confirm_required=confirm_required,
        editable=editable,
        expires_after=expires_after,
    )


@overload
def tool(func: Callable[..., Any], /) -> Tool: ...
@overload
def tool(
    *,
    name: str | None = None,
    confirm_required: bool = False,
    editable: bool = True,
    expires_after: float | None = None,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    func: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    confirm_required: bool = False,
    editable: bool = True,
    expires_after: float | None = None,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """`@tool` or `@tool(confirm_required=True)`: a tool that needs a person's approval before it runs;
    `editable=False`: the person may approve or reject it, never change its args; `expires_after`:
    the seconds a person has to answer (else the agent's time, 24 h by default)."""
    if func is not None:
        return make_tool(func)
    return lambda f: make_tool(
        f, name=name, confirm_required=confirm_required, editable=editable, expires_after=expires_after
    )


__all__ = ["Tool", "make_tool", "tool"]

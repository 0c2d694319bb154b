"""Tools an agent can call: `@tool` turns a typed function into one, its argument schema from the hints."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, get_type_hints, overload

from beam_store import canonical_json
from pydantic import BaseModel, ConfigDict, ValidationError, create_model
from pydantic_core import to_jsonable_python

from ..errors import BeamError, ToolError, clip

if TYPE_CHECKING:
    from beam_store.records import Approvals


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    func: Callable[..., Any]
    confirm_required: bool = False
    # whether the person who approves a call may edit its args
    editable: bool = True
    # seconds a person has to answer a call of it (None: the agent's time)
    expires_after: float | None = None
    # who may answer a call of it, where not the session's owner alone (agents.yaml's tool_settings)
    approvals: Approvals | None = None
    # whether an approval may grant it for the rest of the session ("always allow", CONTRACT 10)
    grantable: bool = True

    @functools.cached_property
    def args_model(self) -> type[BaseModel]:
        """The args' schema from the function's hints, made by its first use (a call, an edit's check, the
        schema sent to the model), not when the agent is registered: an API handler that only checks and
        queues never resolves the hints (string annotations cost a compile each) nor builds the model."""
        return _args_model(self.func, self.name)

    def json_schema(self) -> dict[str, Any]:
        return self.args_model.model_json_schema()

    def problems(self, args: dict[str, Any]) -> list[tuple[str, str]]:
        """What in `args` does not fit the schema, as (dotted field, problem) pairs; none when it fits."""
        try:
            self._validated(args)
        except ValidationError as error:
            return [(".".join(str(p) for p in e["loc"]), e["msg"]) for e in error.errors()]
        except (TypeError, ValueError) as error:  # not JSON at all (a Python caller's object)
            return [("", f"the args are not JSON: {clip(str(error), 200)}")]
        return []

    def _validated(self, args: dict[str, Any]) -> BaseModel:
        """The args as the function gets them, validated strictly as the JSON they are stored and hashed
        as: no coercion (`1` is not `true`, `"50"` nor `50.0` is 50), so what a policy or a person judged
        is what runs."""
        return self.args_model.model_validate_json(canonical_json(args), strict=True)

    def invoke(self, args: dict[str, Any]) -> Any:
        """Validate `args` against the schema, call the function, return its output as JSON-able data."""
        try:
            validated = self._validated(args)
        except (TypeError, ValueError):  # a ValidationError is a ValueError
            raise ToolError("BEM-332", unfit_message(self.name, self.problems(args))) from None
        kwargs = {name: getattr(validated, name) for name in type(validated).model_fields}
        try:
            return to_jsonable_python(self.func(**kwargs))
        except BeamError:
            raise
        except BaseException as error:
            # a tool's own failure is its outcome, not the run's, whatever it raises: SystemExit,
            # KeyboardInterrupt, GeneratorExit, CancelledError too (else its run stays `running` for the
            # lease and its worker dies); a sync tool's CancelledError is its own loop's, never ours
            raise ToolError("BEM-331", f"{self.name} failed: {type(error).__name__}: {error}") from error


def unfit_message(tool: str, problems: Sequence[tuple[str, str]]) -> str:
    """What the agent is told of args that do not fit `tool`'s schema: each field and its problem (the
    first few), bounded."""
    listed = "; ".join(f"{field or 'args'}: {clip(problem, 200)}" for field, problem in problems[:5])
    more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
    return clip(f"{tool}: invalid arguments: {listed}{more}", 1000)


def _parameters(func: Callable[..., Any], name: str) -> list[inspect.Parameter]:
    parameters = list(inspect.signature(func).parameters.values())
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in parameters):
        raise TypeError(f"tool {name}: *args and **kwargs have no schema")
    return parameters


def _args_model(func: Callable[..., Any], name: str) -> type[BaseModel]:
    hints = get_type_hints(func)
    fields: dict[str, Any] = {}
    for param in _parameters(func, name):
        annotation = hints.get(param.name, Any)
        default = ... if param.default is param.empty else param.default
        fields[param.name] = (annotation, default)
    model_name = "".join(part.capitalize() for part in name.split("_")) + "Args"
    # defer_build: its validator is made by its first validation or schema, not here
    return create_model(model_name, __config__=ConfigDict(extra="forbid", defer_build=True), **fields)


def make_tool(
    func: Callable[..., Any],
    *,
    name: str | None = None,
    confirm_required: bool = False,
    editable: bool = True,
    expires_after: float | None = None,
    grantable: bool = True,
) -> Tool:
    tool_name = name or func.__name__
    _parameters(func, tool_name)  # a function no schema fits is refused when it is made a tool
    return Tool(
        name=tool_name,
        description=inspect.getdoc(func) or "",
        func=func,
        confirm_required=confirm_required,
        editable=editable,
        expires_after=expires_after,
        grantable=grantable,
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
    grantable: bool = True,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    func: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    confirm_required: bool = False,
    editable: bool = True,
    expires_after: float | None = None,
    grantable: bool = True,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """`@tool` or `@tool(confirm_required=True)`: a tool that needs a person's approval before it runs;
    `editable=False`: the person may approve or reject it, never change its args; `expires_after`:
    the seconds a person has to answer (else the agent's time, 24 h by default); `grantable=False`: an
    approval may not grant it for the rest of the session ("always allow")."""
    if func is not None:
        return make_tool(func)
    return lambda f: make_tool(
        f,
        name=name,
        confirm_required=confirm_required,
        editable=editable,
        expires_after=expires_after,
        grantable=grantable,
    )


__all__ = ["Tool", "make_tool", "tool"]

"""An MCP server's tools as Riverbeam tools, named `<server>/<tool>`. Each asks for a person's approval
(confirm_required): the server's annotations (read-only, destructive...) are hints it gives about itself,
shown in the tool's description and kept on the tool, never a reason to skip the approval. The args, and a
person's edited args, are checked against the server's input schema before the server is called (a schema
that cannot be checked safely refuses its tool: schemas.py). A listed tool whose name is not of the MCP
specification's safe characters (a confusable or invisible letter could pass for another tool's name) or
whose schema is refused is never offered: it is left out of `<server>/*` with a warning."""

from __future__ import annotations

import itertools
import logging
import re
import threading
from dataclasses import dataclass, field
from typing import Any

from jsonschema.exceptions import ValidationError
from jsonschema.protocols import Validator
from mcp_types import CallToolResult, TextContent
from mcp_types import Tool as ListedTool
from referencing.exceptions import Unresolvable

from ..errors import BeamError, ToolError, clip
from ..tools import Tool
from .client import DEFAULT_TIMEOUT_SECONDS, McpServer
from .schemas import SchemaRefused, safe_validator

logger = logging.getLogger(__name__)

# the MCP specification's tool names (2025-11-25, "Tool names"): ASCII letters, digits, `_`, `-` and `.`
TOOL_NAME = re.compile(r"[A-Za-z0-9_.-]{1,128}")

_HINTS = {
    "read_only_hint": "read-only",
    "destructive_hint": "destructive",
    "idempotent_hint": "idempotent",
    "open_world_hint": "open world",
}


@dataclass
class _Listing:
    """What the server said of one tool, asked for by the first use that needs it and kept after."""

    server: McpServer
    tool: str
    found: ListedTool | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    checker: Validator | None = None

    def get(self) -> ListedTool:
        return self._checked()[0]

    def validator(self) -> Validator:
        return self._checked()[1]

    def _checked(self) -> tuple[ListedTool, Validator]:
        """The listing and its schema's validator; BEM-355 where the server has no such tool, BEM-360
        where its schema is refused (asked again by the next use: nothing is kept of a refusal)."""
        with self.lock:
            if self.found is None:
                listed = {t.name: t for t in self.server.list_tools()}
                if self.tool not in listed:
                    message = f"the MCP server {self.server.name!r} has no tool {self.tool!r}"
                    raise BeamError("BEM-355", clip(message, 500))
                self.found = listed[self.tool]
            if self.checker is None:
                self.checker = schema_validator(self.server, self.found)
            return self.found, self.checker


def schema_validator(server: McpServer, listed: ListedTool) -> Validator:
    """The validator of the tool's input schema; BEM-360 naming the server, the tool and why not."""
    try:
        return safe_validator(dict(listed.input_schema))
    except SchemaRefused as refused:
        message = (
            f"the MCP server {server.name!r} gives {listed.name!r} an input schema that is refused: {refused}"
        )
        raise BeamError("BEM-360", clip(message, 500)) from None


@dataclass(frozen=True)
class McpTool(Tool):
    """A tool of an MCP server; its schema is the server's (asked for by its first use where not given)."""

    listing: _Listing | None = None

    @property
    def annotations(self) -> dict[str, Any]:
        """The server's hints about the tool, as it gave them: shown, never trusted."""
        hints = self._listed().annotations
        return hints.model_dump(exclude_none=True) if hints is not None else {}

    def _listed(self) -> ListedTool:
        assert self.listing is not None, "an McpTool is made by mcp_tool or mcp_tools"
        return self.listing.get()

    def json_schema(self) -> dict[str, Any]:
        return dict(self._listed().input_schema)

    def problems(self, args: dict[str, Any]) -> list[tuple[str, str]]:
        """What in `args` does not fit the server's schema; a ToolError (the call's outcome) where the
        schema cannot be had (the server out of reach) or checked safely (BEM-360)."""
        assert self.listing is not None, "an McpTool is made by mcp_tool or mcp_tools"
        try:
            validator = self.listing.validator()
            found = sorted(validator.iter_errors(args), key=lambda e: [str(p) for p in e.path])
        except ToolError:
            raise
        except BeamError as error:
            raise ToolError(error.code, error.message) from None
        except (Unresolvable, SchemaRefused, RecursionError) as error:  # what the check before could not see
            said = f"the MCP server {self.listing.server.name!r} gives {self.listing.tool!r} an input schema"
            raise ToolError(
                "BEM-360", clip(f"{said} that cannot be checked: {type(error).__name__}", 500)
            ) from None
        return [(_field(e), clip(e.message, 200)) for e in found[:20]]

    def invoke(self, args: dict[str, Any]) -> Any:
        problems = self.problems(args)
        if problems:
            fields = ", ".join(dict.fromkeys(name or "args" for name, _ in problems))
            raise ToolError("BEM-332", f"{self.name}: invalid arguments ({fields})")
        assert self.listing is not None
        server, tool = self.listing.server, self.listing.tool
        result = server.call_tool(tool, args)
        _check_output(server, self.listing.get(), result)
        return _outcome(server, tool, result)


def _check_output(server: McpServer, listed: ListedTool, result: CallToolResult) -> None:
    """A result that does not fit the tool's output schema (checked as safely as an input schema) is
    BEM-361, as the protocol has the client check it."""
    if listed.output_schema is None or result.is_error:
        return
    said = f"the MCP server {server.name!r} answered {listed.name!r} with a result that"
    try:
        validator = safe_validator(dict(listed.output_schema))
        errors = list(itertools.islice(validator.iter_errors(result.structured_content), 3))
    except (SchemaRefused, Unresolvable, RecursionError) as refused:
        reason = str(refused) if isinstance(refused, SchemaRefused) else type(refused).__name__
        raise ToolError(
            "BEM-361", clip(f"{said} cannot be checked: its output schema is refused: {reason}", 500)
        ) from None
    if result.structured_content is None or errors:
        why = "; ".join(e.message for e in errors) or "it has no structured content"
        raise ToolError("BEM-361", clip(f"{said} does not fit its output schema: {why}", 500))


def _field(error: ValidationError) -> str:
    """The dotted field an error is about: for a missing or an unexpected property, that property."""
    path = [str(p) for p in error.path]
    instance, schema = error.instance, error.schema if isinstance(error.schema, dict) else {}
    if error.validator == "required" and isinstance(instance, dict):
        path += [p for p in error.validator_value if p not in instance][:1]
    elif error.validator == "additionalProperties" and isinstance(instance, dict):
        path += sorted(set(instance) - set(schema.get("properties", {})))[:1]
    return ".".join(path)


def _outcome(server: McpServer, tool: str, result: CallToolResult) -> Any:
    text = "\n".join(part.text for part in result.content if isinstance(part, TextContent))
    if result.is_error:
        said = clip(text or "no words", 1000)
        raise ToolError("BEM-354", f"the MCP server {server.name!r} answered an error from {tool}: {said}")
    if result.structured_content is not None:
        return result.structured_content
    return {"text": text} if text else {"content": [p.model_dump(mode="json") for p in result.content]}


def _description(listed: ListedTool | None) -> str:
    if listed is None:
        return ""
    hints = listed.annotations.model_dump(exclude_none=True) if listed.annotations else {}
    said = [label for key, label in _HINTS.items() if hints.get(key)]
    told = f" (the server says: {', '.join(said)}; a person approves each call all the same)" if said else ""
    return (listed.description or listed.title or "") + told


def mcp_tool(server: McpServer, tool: str, listed: ListedTool | None = None) -> McpTool:
    """The tool `tool` of `server` as `<server>/<tool>`, asking for approval; its schema and description
    come from `listed`, else from the server at its first use."""
    listing = _Listing(server, tool, listed)

    def call(**args: Any) -> Any:
        return McpTool.invoke(made, args)

    made = McpTool(
        name=f"{server.name}/{tool}",
        description=_description(listed),
        func=call,
        confirm_required=True,
        listing=listing,
    )
    return made


def mcp_tools(
    name: str, url: str, *, headers: dict[str, str] | None = None, timeout: float | None = None
) -> list[McpTool]:
    """Every tool of the MCP server at `url` (streamable HTTP), each named `<name>/<tool>` and asking for
    approval; `headers` go with each request (a token, say). A server that cannot be reached, does not
    answer in time or answers an error raises a BeamError naming it (BEM-352, BEM-353, BEM-354)."""
    server = McpServer(name, url, dict(headers or {}), timeout or DEFAULT_TIMEOUT_SECONDS)
    return offered_tools(server)


def offered_tools(server: McpServer) -> list[McpTool]:
    """Every tool `server` lists that can be offered: one whose name is not of the specification's safe
    characters, or whose schema is refused, is left out, with a warning naming it (escaped)."""
    offered = []
    for listed in server.list_tools():
        if not TOOL_NAME.fullmatch(listed.name):
            _left_out(server, listed, "its name is not ASCII letters, digits, '_', '-' and '.' (1 to 128)")
            continue
        try:
            checker = safe_validator(dict(listed.input_schema))
        except SchemaRefused as refused:
            _left_out(server, listed, f"its input schema is refused (BEM-360): {refused}")
            continue
        made = mcp_tool(server, listed.name, listed)
        assert made.listing is not None
        made.listing.checker = checker
        offered.append(made)
    return offered


def _left_out(server: McpServer, listed: ListedTool, why: str) -> None:
    name = ascii(listed.name[:200])  # escaped: a confusable letter shows as \u0435
    logger.warning("the MCP server %r lists the tool %s, left out: %s", server.name, name, clip(why, 500))

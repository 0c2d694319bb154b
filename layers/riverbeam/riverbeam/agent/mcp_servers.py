"""`mcp_servers` in agents.yaml: the MCP servers an agent's tools may come from, named by the first part of
a tool's name (`<server>/<tool>`, or `<server>/*` for every tool the server lists when the agents load).

    mcp_servers:
      release:
        url: https://mcp.example.com/mcp
        headers: {X-Team: platform}
        headers_secret: riverbeam/release-mcp   # Secrets Manager: a JSON object of more headers (a token)
        timeout: 30                             # seconds for one exchange with the server

The `mcp` package is imported only where an agent names one of them (riverbeam.mcp)."""

# no `from __future__ import annotations`: pydantic evaluates the field annotations as the models are made
import re
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..errors import BeamError

if TYPE_CHECKING:
    from ..models import AgentResult
    from ..tools import Tool
    from .registry import AgentInput, Emit

SERVER_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
# the MCP specification's tool names (riverbeam.mcp.TOOL_NAME, kept here so the file is read without `mcp`)
TOOL_NAME = re.compile(r"[A-Za-z0-9_.-]{1,128}")


class McpServerSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    url: str = Field(min_length=1)
    headers: dict[str, str] = Field(default_factory=dict)
    headers_secret: str = ""
    timeout: float = Field(default=30.0, gt=0, le=900)

    @field_validator("url")
    @classmethod
    def _http(cls, url: str) -> str:
        if not re.match(r"https?://[^/\s]+", url):
            raise ValueError("must be an http or https URL of the server's streamable HTTP endpoint")
        return url


def is_mcp_tool(name: str) -> bool:
    """Whether an agents.yaml tool name names an MCP server's tool (`<server>/<tool>`)."""
    return "/" in name and ":" not in name


def server_problems(tools: list[str], servers: dict[str, Any]) -> list[str]:
    """The MCP tool names in `tools` whose server is not declared, or whose name is malformed."""
    problems = []
    for name in filter(is_mcp_tool, tools):
        server, _, tool = name.partition("/")
        if not SERVER_NAME.fullmatch(server) or not (tool == "*" or TOOL_NAME.fullmatch(tool)):
            problems.append(
                f"{name!a} is not <server>/<tool> (a server name is ASCII letters, digits, _ and -;"
                " a tool name those and . or *)"
            )
        elif server not in servers:
            problems.append(f"{name!r} names no server of mcp_servers ({sorted(servers) or 'none'})")
    return problems


def covered(name: str, tools: list[str]) -> bool:
    """Whether `name` (in approval or tool_settings) is one of `tools`, `<server>/*` covering its server's."""
    server = name.partition("/")[0]
    return name in tools or (is_mcp_tool(name) and f"{server}/*" in tools)


def mcp_tools_named(name: str, servers: dict[str, McpServerSpec]) -> list["Tool"]:
    """The tools `name` stands for: `<server>/<tool>` one (its schema asked for by its first use),
    `<server>/*` every tool the server lists now (a server out of reach fails the agents' load)."""
    from ..mcp import McpServer, mcp_tool, offered_tools  # the MCP layer: only where an agent names one

    server_name, _, tool = name.partition("/")
    spec = servers[server_name]
    server = McpServer(server_name, spec.url, dict(spec.headers), spec.timeout, spec.headers_secret)
    if tool == "*":
        return list(offered_tools(server))
    return [mcp_tool(server, tool)]


class DisabledAgent:
    """An agent whose `<server>/*` server could not list its tools when the agents loaded: the other
    agents work, and this one's requests are refused (BEM-362, naming the server and why) before anything
    is stored, until the agents load again (a restart, a new container) with the server up."""

    def __init__(self, name: str, cause: BeamError) -> None:
        self.name, self.cause = name, cause
        self.tools: dict[str, Tool] = {}

    def disabled_error(self) -> BeamError:
        cause = f"{self.cause.message} ({self.cause.code})"
        said = f"the agent {self.name!r} is disabled: {cause} when the agents loaded"
        return BeamError(
            "BEM-362", said + "; it works again once they load with the server up", field="agent_name"
        )

    def run(self, input: "AgentInput", emit: "Emit") -> "AgentResult":
        raise self.disabled_error()

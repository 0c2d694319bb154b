"""Tools from MCP servers (the `mcp` package's streamable HTTP client). `mcp` and what it brings are in a
layer of their own, which only the functions that run agents have: this package is imported only where an
agent names an MCP server."""

from .client import McpServer
from .tools import TOOL_NAME, McpTool, mcp_tool, mcp_tools, offered_tools

__all__ = ["TOOL_NAME", "McpServer", "McpTool", "mcp_tool", "mcp_tools", "offered_tools"]

"""Riverbeam: a runtime for AI agents that ask a person before they act.

Every public name is imported on first use (PEP 562), so that `import riverbeam`, or a handler that imports
one of its submodules, pays only for what it uses: a records read never loads the runner, the agents or the
models of a request it does not serve."""

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from beam_store.records import Approvals, TokenUsage

    from .agent.config import BUILTIN_TOOLS
    from .agent.llm import AuthorOfflineModel, ChatModel, ModelTurn, ScriptedModel, ToolCall
    from .agent.registry import AgentInput, AgentRunner, Emit, ResolvedAction, RunnerFailure, agent_id_for
    from .agent.runner import ToolAgentRunner
    from .agent.workspace import prepare_workspace
    from .bedrock import BedrockConverseModel
    from .errors import CATALOGUE, BeamError, ToolError
    from .mcp import mcp_tools
    from .models import (
        ActionRequest,
        ActionResponseEnvelope,
        AgentResult,
        AuthContext,
        DoneFrame,
        ErrorFrame,
        Frame,
        InvokeRequest,
        NewMessage,
        ResumeRequest,
        RunJob,
        RunStartedFrame,
        StreamAck,
        TextDeltaFrame,
        ToolCallFrame,
        ToolResultFrame,
        VoteAck,
    )
    from .pipeline import RiverBeam
    from .pipeline.approval_events import ApprovalEvent, EventLog
    from .policy.cedar import Policy
    from .policy.decision import Decision
    from .tools import Tool, tool
    from .tools.git import git_push_tool

# each public name and the module that defines it
_HOMES = {
    "beam_store.records": ("Approvals", "TokenUsage"),
    ".agent.config": ("BUILTIN_TOOLS",),
    ".agent.registry": (
        "AgentInput",
        "AgentRunner",
        "Emit",
        "ResolvedAction",
        "RunnerFailure",
        "agent_id_for",
    ),
    ".bedrock": ("BedrockConverseModel",),
    ".errors": ("CATALOGUE", "BeamError", "ToolError"),
    ".mcp": ("mcp_tools",),
    ".agent.llm": ("AuthorOfflineModel", "ChatModel", "ModelTurn", "ScriptedModel", "ToolCall"),
    ".models": (
        "ActionRequest",
        "ActionResponseEnvelope",
        "AgentResult",
        "AuthContext",
        "DoneFrame",
        "ErrorFrame",
        "Frame",
        "InvokeRequest",
        "NewMessage",
        "ResumeRequest",
        "RunJob",
        "RunStartedFrame",
        "StreamAck",
        "TextDeltaFrame",
        "ToolCallFrame",
        "ToolResultFrame",
        "VoteAck",
    ),
    ".pipeline": ("RiverBeam",),
    ".pipeline.approval_events": ("ApprovalEvent", "EventLog"),
    # cedarpy is imported by the first use of Policy only: an agent with a policy
    ".policy.cedar": ("Policy",),
    ".policy.decision": ("Decision",),
    ".agent.runner": ("ToolAgentRunner",),
    ".tools": ("Tool", "tool"),
    ".tools.git": ("git_push_tool",),
    ".agent.workspace": ("prepare_workspace",),
}
_HOME = {name: module for module, names in _HOMES.items() for name in names}


def __getattr__(name: str) -> Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(module, __name__), name)
    globals()[name] = value  # found here from now on, without this function
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOME])


__all__ = [
    "BUILTIN_TOOLS",
    "CATALOGUE",
    "ActionRequest",
    "ActionResponseEnvelope",
    "AgentInput",
    "AgentResult",
    "AgentRunner",
    "ApprovalEvent",
    "Approvals",
    "AuthContext",
    "AuthorOfflineModel",
    "BeamError",
    "BedrockConverseModel",
    "ChatModel",
    "Decision",
    "DoneFrame",
    "Emit",
    "ErrorFrame",
    "EventLog",
    "Frame",
    "InvokeRequest",
    "ModelTurn",
    "NewMessage",
    "Policy",
    "ResolvedAction",
    "ResumeRequest",
    "RiverBeam",
    "RunJob",
    "RunStartedFrame",
    "RunnerFailure",
    "ScriptedModel",
    "StreamAck",
    "TextDeltaFrame",
    "TokenUsage",
    "Tool",
    "ToolAgentRunner",
    "ToolCall",
    "ToolCallFrame",
    "ToolError",
    "ToolResultFrame",
    "VoteAck",
    "agent_id_for",
    "git_push_tool",
    "mcp_tools",
    "prepare_workspace",
    "tool",
]

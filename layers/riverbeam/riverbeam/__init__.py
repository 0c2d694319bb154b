"""Riverbeam: a runtime for AI agents that ask a person before they act."""

from .agents import AgentInput, AgentRunner, Emit, ResolvedAction, RunnerFailure, agent_id_for
from .errors import CATALOGUE, BeamError, ToolError
from .llm import AuthorOfflineModel, ChatModel, ModelTurn, ScriptedModel, ToolCall
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
)
from .pipeline import RiverBeam
from .runner import ToolAgentRunner
from .tools import Tool, tool
from .tools.git import git_push_tool

__all__ = [
    "CATALOGUE",
    "ActionRequest",
    "ActionResponseEnvelope",
    "AgentInput",
    "AgentResult",
    "AgentRunner",
    "AuthContext",
    "AuthorOfflineModel",
    "BeamError",
    "ChatModel",
    "DoneFrame",
    "Emit",
    "ErrorFrame",
    "Frame",
    "InvokeRequest",
    "ModelTurn",
    "NewMessage",
    "ResolvedAction",
    "ResumeRequest",
    "RiverBeam",
    "RunJob",
    "RunStartedFrame",
    "RunnerFailure",
    "ScriptedModel",
    "StreamAck",
    "TextDeltaFrame",
    "Tool",
    "ToolAgentRunner",
    "ToolCall",
    "ToolCallFrame",
    "ToolError",
    "ToolResultFrame",
    "agent_id_for",
    "git_push_tool",
    "tool",
]

"""Riverbeam: a runtime for AI agents that ask a person before they act."""

from typing import TYPE_CHECKING, Any

from beam_store.records import TokenUsage

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

if TYPE_CHECKING:
    from .bedrock import BedrockConverseModel


def __getattr__(name: str) -> Any:
    # imported on first use: a handler that runs no Bedrock agent never pays for botocore's event streams
    if name == "BedrockConverseModel":
        from .bedrock import BedrockConverseModel

        return BedrockConverseModel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
    "BedrockConverseModel",
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
    "TokenUsage",
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

"""Amazon Bedrock (ConverseStream with tool use) as a model of ToolAgentRunner."""

from .messages import ConversationWindow, converse_messages, tool_config
from .model import BedrockConverseModel

__all__ = ["BedrockConverseModel", "ConversationWindow", "converse_messages", "tool_config"]

"""The session's messages as Strands' (StrandsRunner's history for a new interaction): the last person's
message is the prompt, a role's messages in a row are one message (a turn's tool results together),
errors are told with their code, and a call without its result (or a result without its call) is left
out, as Bedrock would refuse it."""

from __future__ import annotations

from beam_store import ErrorInfo, TextPart, ToolCallPart, ToolResultPart
from riverbeam.frameworks.strands import agent_history

from tests.support.framework_desk import message


def test_the_conversation_becomes_the_frameworks_messages() -> None:
    refused = ErrorInfo(code="BEM-069", message="ann refused to run pay: no")
    history = [
        message(1, "tool", ToolResultPart(tool_call_id="gone", name="pay", status="ok", output="x")),
        message(2, "human", TextPart(text="Pay bob and carol")),
        message(
            3,
            "ai",
            TextPart(text="paying"),
            ToolCallPart(tool_call_id="a", name="pay", args={"to": "bob"}),
            ToolCallPart(tool_call_id="b", name="pay", args={"to": "carol"}),
            ToolCallPart(tool_call_id="lost", name="pay", args={"to": "dan"}),
        ),
        message(4, "tool", ToolResultPart(tool_call_id="a", name="pay", status="ok", output={"paid": 5})),
        message(5, "human", type="action_result"),
        message(6, "tool", ToolResultPart(tool_call_id="b", name="pay", status="refused", error=refused)),
        message(7, "ai", TextPart(text="paid bob")),
        message(8, "human", TextPart(text="and now?")),
    ]
    made, prompt = agent_history(history, [TextPart(text="and now?")])
    assert prompt == "and now?"
    assert made == [
        {"role": "user", "content": [{"text": "Pay bob and carol"}]},
        {
            "role": "assistant",
            "content": [
                {"text": "paying"},
                {"toolUse": {"toolUseId": "a", "name": "pay", "input": {"to": "bob"}}},
                {"toolUse": {"toolUseId": "b", "name": "pay", "input": {"to": "carol"}}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"toolResult": {"toolUseId": "a", "status": "success", "content": [{"text": '{"paid": 5}'}]}},
                {
                    "toolResult": {
                        "toolUseId": "b",
                        "status": "error",
                        "content": [{"text": "BEM-069: ann refused to run pay: no"}],
                    }
                },
            ],
        },
        {"role": "assistant", "content": [{"text": "paid bob"}]},
    ]

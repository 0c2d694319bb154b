"""The session's messages as Pydantic AI's (PydanticAIRunner's history for a new interaction): the last
person's message is the prompt, a turn's tool results are one request, errors are told with their code,
and a call without its result (or a result without its call) is left out, as a provider would refuse it."""

from __future__ import annotations

from beam_store import ErrorInfo, TextPart, ToolCallPart, ToolResultPart
from pydantic_ai import messages as pai
from riverbeam.frameworks.pydantic_ai import model_history

from tests.support.framework_desk import message


def test_the_conversation_becomes_the_frameworks_messages() -> None:
    history = [
        message(1, "tool", ToolResultPart(tool_call_id="gone", name="pay", status="ok", output="x")),
        message(2, "human", TextPart(text="Pay bob and carol")),
        message(
            3,
            "ai",
            TextPart(text="paying"),
            ToolCallPart(tool_call_id="a", name="pay", args={"to": "bob"}),
            ToolCallPart(tool_call_id="b", name="pay", args={"to": "carol"}),
        ),
        message(4, "tool", ToolResultPart(tool_call_id="a", name="pay", status="ok", output="paid bob")),
        message(5, "human", TextPart(text="ignored"), type="action_result"),
        message(
            6,
            "tool",
            ToolResultPart(
                tool_call_id="b",
                name="pay",
                status="refused",
                error=ErrorInfo(code="BEM-069", message="u1 refused to run pay: not carol"),
            ),
        ),
        message(7, "ai", ToolCallPart(tool_call_id="c", name="pay", args={"to": "dan"})),  # never answered
        message(8, "human", TextPart(text="recap")),
    ]
    made, prompt = model_history(history, [TextPart(text="recap")])
    assert prompt == "recap"
    said = [[type(p).__name__ for p in m.parts] for m in made]
    assert said == [["UserPromptPart"], ["TextPart", "ToolCallPart", "ToolCallPart"], ["ToolReturnPart"] * 2]
    returns = [p for p in made[2].parts if isinstance(p, pai.ToolReturnPart)]
    assert [p.content for p in returns] == ["paid bob", "BEM-069: u1 refused to run pay: not carol"]

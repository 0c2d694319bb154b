"""The stored conversation as Converse messages, pure: roles alternate, every toolUse is answered in the
next user turn, and the window never starts between a toolUse and its toolResult."""

from __future__ import annotations

from typing import Any

from beam_store.records import ActionResponsePart, ErrorInfo, TextPart, ToolCallPart, ToolResultPart
from riverbeam import NewMessage
from riverbeam.bedrock import ConversationWindow, converse_messages


def human(text: str) -> NewMessage:
    return NewMessage(role="human", content=[TextPart(text=text)])


def ai(text: str, *calls: tuple[str, str | None]) -> NewMessage:
    parts: list[Any] = [TextPart(text=text)] if text else []
    parts += [
        ToolCallPart(tool_call_id=i, name="git_push", args={"ref": i}, model_call_id=m) for i, m in calls
    ]
    return NewMessage(role="ai", content=parts)


def result(call_id: str, status: str = "ok") -> NewMessage:
    error = None if status == "ok" else ErrorInfo(code="BEM-069", message="u1 refused to run git_push: no")
    part = ToolResultPart(tool_call_id=call_id, name="git_push", status=status, output="done", error=error)  # type: ignore[arg-type]
    return NewMessage(role="tool", content=[part])


def roles(messages: list[dict[str, Any]]) -> list[str]:
    return [m["role"] for m in messages]


def test_roles_alternate_and_same_role_turns_merge() -> None:
    messages = converse_messages([human("a"), human("b"), ai("c"), ai("d"), human("e")])
    assert roles(messages) == ["user", "assistant", "user"]
    assert messages[0]["content"] == [{"text": "a"}, {"text": "b"}]


def test_tool_use_ids_are_the_models_and_results_follow_in_the_next_user_turn() -> None:
    answer = NewMessage(
        role="human", type="action_result", content=[ActionResponsePart(action_id="c1", status="submitted")]
    )
    messages = converse_messages([human("push"), ai("", ("c1", "tooluse_1")), answer, result("c1")])
    assert messages[1]["content"][0]["toolUse"]["toolUseId"] == "tooluse_1"
    assert messages[2] == {
        "role": "user",
        "content": [
            {"toolResult": {"toolUseId": "tooluse_1", "content": [{"text": '"done"'}], "status": "success"}}
        ],
    }


def test_a_refused_call_is_an_error_result_saying_so() -> None:
    messages = converse_messages([human("push"), ai("", ("c1", None)), result("c1", "refused")])
    block = messages[-1]["content"][0]["toolResult"]
    assert block["status"] == "error" and block["toolUseId"] == "c1"
    assert "refused" in block["content"][0]["text"] and "no" in block["content"][0]["text"]


def test_an_unanswered_call_gets_a_result_before_the_next_question() -> None:
    messages = converse_messages([human("push"), ai("", ("c1", None)), human("never mind")])
    assert roles(messages) == ["user", "assistant", "user"]
    first, second = messages[-1]["content"]
    assert first["toolResult"]["toolUseId"] == "c1" and first["toolResult"]["status"] == "error"
    assert second == {"text": "never mind"}


def test_the_window_starts_at_a_persons_message_never_inside_a_tool_exchange() -> None:
    conversation = []
    for i in range(30):
        conversation += [human(f"push {i}"), ai("", (f"c{i}", None)), result(f"c{i}"), ai(f"pushed {i}")]
    messages = converse_messages(conversation, ConversationWindow(max_messages=10))
    assert len(messages) <= 10
    assert messages[0]["role"] == "user" and "text" in messages[0]["content"][0]
    uses = {b["toolUse"]["toolUseId"] for m in messages for b in m["content"] if "toolUse" in b}
    results = {b["toolResult"]["toolUseId"] for m in messages for b in m["content"] if "toolResult" in b}
    assert uses == results and uses
    assert messages[-1]["content"] == [{"text": "pushed 29"}]


def test_a_last_message_over_the_budget_is_still_sent() -> None:
    messages = converse_messages(
        [human("old"), ai("ok"), human("x" * 1000)], ConversationWindow(max_chars=100)
    )
    assert messages == [{"role": "user", "content": [{"text": "x" * 1000}]}]

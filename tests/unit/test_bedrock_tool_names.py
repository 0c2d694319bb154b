"""Converse takes tool names of letters, digits, `_` and `-` only: an MCP tool's `<server>/<tool>` goes to
Bedrock as `<server>__<tool>`, in the tools and in the conversation's earlier calls, and the model's call of
it comes back under the tool's own name."""

from __future__ import annotations

from typing import Any

from beam_store import TextPart, ToolCallPart
from riverbeam import BedrockConverseModel, NewMessage, tool
from riverbeam.bedrock.messages import converse_name


@tool(name="release/deploy", confirm_required=True)
def deploy(service: str) -> str:
    """Deploy a service."""
    return service


class OneToolCall:
    """A bedrock-runtime client whose model calls `release__deploy` once; it keeps the requests."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []

    def converse_stream(self, **request: Any) -> dict[str, Any]:
        self.requests.append(request)
        events = [
            {
                "contentBlockStart": {
                    "contentBlockIndex": 0,
                    "start": {"toolUse": {"toolUseId": "t1", "name": "release__deploy"}},
                }
            },
            {
                "contentBlockDelta": {
                    "contentBlockIndex": 0,
                    "delta": {"toolUse": {"input": '{"service": "web"}'}},
                }
            },
            {"messageStop": {"stopReason": "tool_use"}},
        ]
        return {"stream": iter(events)}


def test_names_go_as_converse_takes_them_and_come_back_as_the_tools_own() -> None:
    client = OneToolCall()
    model = BedrockConverseModel("anthropic.claude-3-5-haiku-20241022-v1:0", client=client)
    earlier = NewMessage(
        role="ai",
        type="message",
        content=[
            ToolCallPart(tool_call_id="c0", name="release/deploy", args={"service": "db"}, model_call_id="t0")
        ],
    )
    asked = NewMessage(role="human", type="message", content=[TextPart(text="deploy web")])
    turn = model.next_turn([asked, earlier, asked], [deploy], lambda _: None)

    assert [(c.name, c.args) for c in turn.tool_calls] == [("release/deploy", {"service": "web"})]
    request = client.requests[0]
    assert [t["toolSpec"]["name"] for t in request["toolConfig"]["tools"]] == ["release__deploy"]
    uses = [b["toolUse"]["name"] for m in request["messages"] for b in m["content"] if "toolUse" in b]
    assert uses == ["release__deploy"]


def test_a_converse_name_has_only_what_converse_takes() -> None:
    assert converse_name("git_push") == "git_push"
    assert converse_name("release/deploy") == "release__deploy"
    assert converse_name("gh/issues.create") == "gh__issues_create"
    assert len(converse_name("s/" + "x" * 100)) == 64

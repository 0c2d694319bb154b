"""Units with no store and no network: tools, the offline models, the runner's loop, request parsing."""

from __future__ import annotations

from typing import Any

import pytest
from beam_store import TextPart, ToolCallPart, ToolResultPart
from riverbeam import (
    CATALOGUE,
    AgentInput,
    AuthorOfflineModel,
    BeamError,
    InvokeRequest,
    ModelTurn,
    NewMessage,
    RunnerFailure,
    ScriptedModel,
    ToolAgentRunner,
    ToolCall,
    ToolError,
    tool,
)
from riverbeam.pipeline.intake import parse_request


@tool
def add(a: int, b: int = 2) -> int:
    """Add two numbers."""
    return a + b


def human(text: str) -> NewMessage:
    return NewMessage(role="human", content=[TextPart(text=text)])


def test_tool_schema_comes_from_type_hints() -> None:
    schema = add.json_schema()
    assert schema["properties"]["a"]["type"] == "integer" and schema["required"] == ["a"]
    assert add.description == "Add two numbers." and not add.confirm_required
    assert add.invoke({"a": 1}) == 3 and add.invoke({"a": 4, "b": 1}) == 5


@pytest.mark.parametrize("args", [{}, {"a": "x"}, {"a": 1, "c": 2}, {"a": "4"}, {"a": 4.0}])
def test_tool_refuses_args_that_do_not_fit_with_bem332(args: dict[str, Any]) -> None:
    with pytest.raises(ToolError) as raised:
        add.invoke(args)
    assert raised.value.code == "BEM-332"


def test_confirm_required_is_kept() -> None:
    @tool(confirm_required=True)
    def deploy(env: str) -> str:
        """Deploy."""
        return env

    assert deploy.confirm_required and deploy.name == "deploy"


def test_scripted_model_picks_its_turn_from_the_conversation() -> None:
    model = ScriptedModel([ModelTurn(text="first"), ModelTurn(text="second")])
    chunks: list[str] = []
    assert model.next_turn([human("hi")], [], chunks.append).text == "first"
    # a fresh instance (another process) given the same conversation picks the same turn
    again = ScriptedModel([ModelTurn(text="first"), ModelTurn(text="second")])
    conversation = [human("hi"), NewMessage(role="ai", content=[TextPart(text="first")]), human("more")]
    assert again.next_turn(conversation, [], chunks.append).text == "second"
    assert "".join(chunks) == "firstsecond"
    with pytest.raises(RuntimeError):
        again.next_turn([*conversation, NewMessage(role="ai", content=[])], [], chunks.append)


def test_scripted_model_reads_its_place_from_its_last_tool_call_in_a_window() -> None:
    script = [
        ModelTurn(text="a"),
        ModelTurn(tool_calls=[ToolCall(name="add", args={"a": 1})]),
        ModelTurn(text="b"),
        ModelTurn(text="c"),
    ]
    said = NewMessage(role="ai", content=[TextPart(text="a")])
    call = ScriptedModel(script).next_turn([human("1"), said, human("2")], [], lambda _: None)
    # the call carries its turn's place in the script, where a provider puts its call id
    assert [c.model_call_id for c in call.tool_calls] == ["scripted:1:0"]
    assert script[1].tool_calls[0].model_call_id is None
    # another process given the session's last messages only (a resume's window) picks the turns after it
    asked = NewMessage(
        role="ai", content=[ToolCallPart(tool_call_id="t", name="add", model_call_id="scripted:1:0")]
    )
    answered = NewMessage(role="tool", content=[ToolResultPart(tool_call_id="t", name="add", status="ok")])
    again = ScriptedModel(script)
    window = [human("2"), asked, answered]
    assert again.next_turn(window, [], lambda _: None).text == "b"
    window += [NewMessage(role="ai", content=[TextPart(text="b")]), human("3")]
    assert again.next_turn(window, [], lambda _: None).text == "c"


@pytest.mark.parametrize("text, ref", [("Push docs/update", "docs/update"), ("please push main.", "main")])
def test_author_model_asks_to_push_the_named_ref(text: str, ref: str) -> None:
    turn = AuthorOfflineModel().next_turn([human(text)], [], lambda _: None)
    assert [(c.name, c.args) for c in turn.tool_calls] == [("git_push", {"ref": ref})]


def test_author_model_answers_other_messages_and_tool_results() -> None:
    model = AuthorOfflineModel()
    assert model.next_turn([human("hello")], [], lambda _: None).tool_calls == []
    refused = NewMessage(
        role="tool", content=[ToolResultPart(tool_call_id="c", name="git_push", status="refused")]
    )
    assert "did not push" in model.next_turn([human("push x"), refused], [], lambda _: None).text


def test_runner_stops_after_its_turn_limit() -> None:
    model = ScriptedModel([ModelTurn(tool_calls=[ToolCall(name="add", args={"a": 1})])] * 5)
    runner = ToolAgentRunner(model=model, tools=[add], max_turns=3)
    agent_input = AgentInput(
        agent_name="a", session_id="s", interaction_id="i", run_id="r", user_id="u", history=[]
    )
    with pytest.raises(RunnerFailure) as raised:
        runner.run(agent_input, lambda frame: None)
    assert isinstance(raised.value.cause, BeamError) and raised.value.cause.code == "BEM-041"
    # what ran before the limit is handed back, to be stored
    assert [m.role for m in raised.value.partial.messages] == ["ai", "tool"] * 3


def test_runner_reports_an_unknown_tool_to_the_model() -> None:
    model = ScriptedModel([ModelTurn(tool_calls=[ToolCall(name="nope")]), ModelTurn(text="ok")])
    runner = ToolAgentRunner(model=model, tools=[add])
    agent_input = AgentInput(agent_name="a", session_id="s", interaction_id="i", run_id="r", user_id="u")
    result = runner.run(agent_input, lambda frame: None)
    results = [p for m in result.messages for p in m.content if isinstance(p, ToolResultPart)]
    assert (
        results[0].status == "error" and results[0].error is not None and results[0].error.code == "BEM-333"
    )
    assert result.text() == "ok"


def test_runner_makes_its_model_on_first_use_and_once() -> None:
    made: list[ScriptedModel] = []

    def make_model() -> ScriptedModel:
        made.append(ScriptedModel([ModelTurn(text="hi")]))
        return made[-1]

    runner = ToolAgentRunner(make_model=make_model, tools=[add])
    # what an API handler's checks ask of a runner needs no model
    assert runner.editable("add") and runner.validate_args("add", {"a": "x"}) and made == []
    agent_input = AgentInput(agent_name="a", session_id="s", interaction_id="i", run_id="r", user_id="u")
    assert runner.run(agent_input, lambda frame: None).text() == "hi"
    assert runner.run(agent_input, lambda frame: None).text() == "hi"
    assert len(made) == 1 and runner.model is made[0]


def test_runner_takes_a_model_or_its_maker_not_both_nor_neither() -> None:
    model = ScriptedModel([ModelTurn(text="hi")])
    with pytest.raises(TypeError):
        ToolAgentRunner()
    with pytest.raises(TypeError):
        ToolAgentRunner(model=model, make_model=lambda: model)


def test_request_errors_name_every_bad_field() -> None:
    with pytest.raises(BeamError) as raised:
        parse_request(InvokeRequest, {"agent_name": "", "session_id": "x", "content": []})
    message = raised.value.message
    for field in ("agent_name", "session_id", "content", "auth_context"):
        assert field in message
    assert raised.value.code == "BEM-001" and raised.value.status == 400


def test_uuid_fields_are_normalised() -> None:
    request = parse_request(
        InvokeRequest,
        {
            "agent_name": "a",
            "session_id": "6F9619FF8B86D011B42D00C04FC964FF",
            "content": [{"type": "text", "text": "x"}],
            "auth_context": {"user_id": "u"},
        },
    )
    assert str(request.session_id) == "6f9619ff-8b86-d011-b42d-00c04fc964ff"


def test_catalogue_statuses_match_the_contract() -> None:
    expected = {
        "BEM-001": 400,
        "BEM-020": 404,
        "BEM-021": 404,
        "BEM-022": 404,
        "BEM-023": 404,
        "BEM-027": 404,
        "BEM-031": 403,
        "BEM-040": 409,
        "BEM-062": 400,
        "BEM-063": 400,
        "BEM-064": 400,
        "BEM-065": 400,
        "BEM-066": 400,
        "BEM-067": 400,
        "BEM-330": 502,
        "BEM-500": 500,
    }
    assert {code: CATALOGUE[code][0] for code in expected} == expected
    body = BeamError("BEM-066").to_dict("req-1")
    assert body == {
        "error": {"code": "BEM-066", "message": "the action is not pending", "request_id": "req-1"}
    }

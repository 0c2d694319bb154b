"""BedrockConverseModel through the pipeline, on a real `bedrock-runtime` client whose calls botocore's
Stubber answers (requests checked against the API's own shapes) with events shaped as ConverseStream's."""

from __future__ import annotations

import uuid

import pytest
from beam_store import BeamStore, InMemoryStore, TokenUsage
from riverbeam import AgentResult, BeamError, BedrockConverseModel, RiverBeam, ToolAgentRunner, tool

from tests.support.agents import FrameLog, PushCounter, invoke_body, resume_body
from tests.support.bedrock import MODEL, Bedrock, failing_midway, text_events, tool_events


@tool
def list_files() -> list[str]:
    """List the files of the work tree."""
    return ["README.md"]


def bedrock_beam(store: BeamStore, bedrock: Bedrock, counter: PushCounter) -> tuple[RiverBeam, list[float]]:
    sleeps: list[float] = []
    model = BedrockConverseModel(
        MODEL,
        client=bedrock.client,
        system="You push branches.",
        inference={"maxTokens": 512, "temperature": 0.2},
        sleep=sleeps.append,
    )
    beam = RiverBeam(store)
    beam.register_agent("author", ToolAgentRunner(model=model, tools=[counter.tool(), list_files]))
    return beam, sleeps


def text_of(frames: FrameLog) -> str:
    return "".join(getattr(f, "text", "") for f in frames if f.type == "text_delta")


def test_a_plain_streamed_answer() -> None:
    bedrock, frames = Bedrock(), FrameLog()
    bedrock.answer(text_events("Hello", ", I can ", "push branches."))
    beam, _ = bedrock_beam(InMemoryStore(), bedrock, PushCounter())
    result = beam.invoke(invoke_body(text="Hello"), on_frame=frames)
    assert isinstance(result, AgentResult) and not result.interrupted
    assert result.text() == "Hello, I can push branches." == text_of(frames)
    run = beam.store.get_run(result.run_id or "")
    assert run is not None and run.usage == TokenUsage(input_tokens=12, output_tokens=5)
    (request,) = bedrock.requests
    assert request["modelId"] == MODEL
    assert request["messages"] == [{"role": "user", "content": [{"text": "Hello"}]}]
    assert request["system"] == [{"text": "You push branches."}]
    assert request["inferenceConfig"] == {"maxTokens": 512, "temperature": 0.2}
    specs = {t["toolSpec"]["name"]: t["toolSpec"] for t in request["toolConfig"]["tools"]}
    schema = specs["git_push"]["inputSchema"]["json"]
    assert schema["properties"] == {"ref": {"title": "Ref", "type": "string"}}
    assert specs["list_files"]["description"] == "List the files of the work tree."
    bedrock.stubber.assert_no_pending_responses()


def test_a_tool_call_waits_for_approval_and_a_new_process_sends_its_result(store: BeamStore) -> None:
    counter, first = PushCounter(), Bedrock()
    first.answer(tool_events(("tooluse_7Kq", "git_push", ['{"ref": "docs', '/update"}']), text="On it."))
    beam, _ = bedrock_beam(store, first, counter)
    result = beam.invoke(invoke_body())
    assert isinstance(result, AgentResult) and result.interrupted
    (action,) = result.action_required
    assert (action.tool, action.args) == ("git_push", {"ref": "docs/update"})
    assert str(uuid.UUID(action.action_id or "")) == action.action_id  # ours, not Bedrock's id

    second = Bedrock()  # another Lambda instance: a new client, model and RiverBeam over the same store
    second.answer(text_events("Pushed docs/update."))
    resumed, _ = bedrock_beam(store, second, counter)
    resumed.resume(resume_body(result))
    assert counter.pushed == ["docs/update"]
    (request,) = second.requests
    messages = request["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[1]["content"] == [
        {"text": "On it."},
        {"toolUse": {"toolUseId": "tooluse_7Kq", "name": "git_push", "input": {"ref": "docs/update"}}},
    ]
    assert messages[-1]["content"] == [
        {
            "toolResult": {
                "toolUseId": "tooluse_7Kq",
                "content": [{"json": {"ref": "docs/update"}}],
                "status": "success",
            }
        }
    ]
    resumed_run = store.list_runs(result.interaction_id or "")[-1]
    assert resumed_run.usage == TokenUsage(input_tokens=12, output_tokens=5)  # kept by every store
    last = store.list_messages(result.session_id or "")[-1]
    assert last.role == "ai" and last.content[0].text == "Pushed docs/update."  # type: ignore[union-attr]


def test_two_tool_calls_in_one_turn_one_needing_approval() -> None:
    store, counter, bedrock = InMemoryStore(), PushCounter(), Bedrock()
    bedrock.answer(
        tool_events(("tu_list", "list_files", ["{}"]), ("tu_push", "git_push", ['{"ref":"main"}']))
    )
    bedrock.answer(text_events("Done."))
    beam, _ = bedrock_beam(store, bedrock, counter)
    result = beam.invoke(invoke_body(text="List, then push main"))
    assert isinstance(result, AgentResult)
    assert [a.tool for a in result.action_required] == ["git_push"]
    beam.resume(resume_body(result))
    last_user = bedrock.requests[-1]["messages"][-1]
    assert last_user["role"] == "user"
    results = {b["toolResult"]["toolUseId"]: b["toolResult"] for b in last_user["content"]}
    assert set(results) == {"tu_list", "tu_push"}
    assert results["tu_list"]["content"] == [{"text": '["README.md"]'}]
    assert counter.pushed == ["main"]


def test_a_refusal_is_an_error_result_the_model_answers() -> None:
    store, counter, bedrock = InMemoryStore(), PushCounter(), Bedrock()
    bedrock.answer(tool_events(("tu_1", "git_push", ['{"ref": "main"}'])))
    bedrock.answer(text_events("Understood, I will not push main."))
    beam, _ = bedrock_beam(store, bedrock, counter)
    result = beam.invoke(invoke_body(text="Push main"))
    assert isinstance(result, AgentResult)
    beam.resume(resume_body(result, status="cancelled", reason="not before the release"))
    assert counter.pushed == []
    (block,) = bedrock.requests[-1]["messages"][-1]["content"]
    assert block["toolResult"]["status"] == "error" and block["toolResult"]["toolUseId"] == "tu_1"
    said = block["toolResult"]["content"][0]["text"]
    assert "refused" in said and "not before the release" in said
    assert store.list_messages(result.session_id or "")[-1].content[0].text.startswith("Understood")  # type: ignore[union-attr]


def test_a_throttled_call_is_tried_again() -> None:
    bedrock, frames = Bedrock(), FrameLog()
    bedrock.fail("ThrottlingException", 429)
    bedrock.answer(text_events("Hello."))
    beam, sleeps = bedrock_beam(InMemoryStore(), bedrock, PushCounter())
    result = beam.invoke(invoke_body(text="Hi"), on_frame=frames)
    assert isinstance(result, AgentResult) and result.text() == "Hello."
    assert len(sleeps) == 1 and len(bedrock.requests) == 2


def test_a_stream_throttled_midway_is_tried_again_without_repeating_text() -> None:
    bedrock, frames = Bedrock(), FrameLog()
    bedrock.answer(failing_midway(text_events("Hello, I")[:2], "throttlingException"))
    bedrock.answer(text_events("Hello, I can ", "help."))
    beam, sleeps = bedrock_beam(InMemoryStore(), bedrock, PushCounter())
    result = beam.invoke(invoke_body(text="Hi"), on_frame=frames)
    assert isinstance(result, AgentResult) and result.text() == "Hello, I can help."
    assert text_of(frames) == "Hello, I can help."  # "Hello, I" streamed once
    assert len(sleeps) == 1


def test_max_tokens_ends_the_run_with_what_was_said_and_a_note() -> None:
    store, bedrock = InMemoryStore(), Bedrock()
    bedrock.answer(text_events("The history of git is long and", stop="max_tokens"))
    beam, _ = bedrock_beam(store, bedrock, PushCounter())
    result = beam.invoke(invoke_body(text="Tell me everything"))
    assert isinstance(result, AgentResult) and not result.interrupted
    assert result.text().startswith("The history of git is long and")
    assert "token limit" in result.text()
    run = store.get_run(result.run_id or "")
    assert run is not None and run.status == "completed"


@pytest.mark.parametrize(
    "stop, code",
    [
        ("guardrail_intervened", "BEM-340"),
        ("content_filtered", "BEM-341"),
        ("malformed_model_output", "BEM-342"),
        ("malformed_tool_use", "BEM-343"),
        ("model_context_window_exceeded", "BEM-344"),
    ],
)
def test_a_stop_that_is_a_failure_fails_the_run_with_its_code(stop: str, code: str) -> None:
    store, bedrock = InMemoryStore(), Bedrock()
    bedrock.answer(text_events("I", stop=stop))
    beam, _ = bedrock_beam(store, bedrock, PushCounter())
    body = invoke_body(text="Something")
    with pytest.raises(BeamError) as raised:
        beam.invoke(body)
    assert raised.value.code == code
    (interaction,) = {m.interaction_id for m in store.list_messages(body["session_id"])}
    (run,) = store.list_runs(interaction)
    assert run.status == "failed" and run.error is not None and run.error.code == code


@pytest.mark.parametrize(
    "aws_code, status, code",
    [
        ("AccessDeniedException", 403, "BEM-347"),
        ("ResourceNotFoundException", 404, "BEM-348"),
        ("ValidationException", 400, "BEM-346"),
    ],
)
def test_a_non_retryable_error_fails_the_run_naming_the_model(aws_code: str, status: int, code: str) -> None:
    store, bedrock = InMemoryStore(), Bedrock()
    bedrock.fail(aws_code, status)
    beam, sleeps = bedrock_beam(store, bedrock, PushCounter())
    with pytest.raises(BeamError) as raised:
        beam.invoke(invoke_body(text="Hi"))
    assert raised.value.code == code and MODEL in raised.value.message
    assert "Traceback" not in raised.value.message and sleeps == []


def test_retries_are_bounded() -> None:
    bedrock = Bedrock()
    for _ in range(4):
        bedrock.fail("ServiceUnavailableException", 503)
    beam, sleeps = bedrock_beam(InMemoryStore(), bedrock, PushCounter())
    with pytest.raises(BeamError) as raised:
        beam.invoke(invoke_body(text="Hi"))
    assert raised.value.code == "BEM-345" and len(sleeps) == 3
    bedrock.stubber.assert_no_pending_responses()


def test_the_model_client_is_made_on_first_use_only() -> None:
    model = BedrockConverseModel(MODEL)
    assert model._client is None  # constructing (and importing) costs no client

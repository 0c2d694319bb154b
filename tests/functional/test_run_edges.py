"""A run's edges in Python, where a user's own code meets them: two tools of one name are refused when
the runner is made; the bounds of a call's args are counted without recursion (100,000 levels cost a walk,
never a RecursionError); another runner's request whose args nest too deep fails its run with BEM-045, not
BEM-500, and the run is closed; the offline model and Bedrock's streamed tool input read a call nested past
Python's recursion limit as a malformed call, never as an internal error."""

from __future__ import annotations

from typing import Any

import pytest
from beam_store import InMemoryStore
from riverbeam import ActionRequest, AgentResult, BeamError, RiverBeam, ScriptedModel, ToolAgentRunner, tool
from riverbeam.agent.llm import AuthorOfflineModel
from riverbeam.bedrock.converse_stream import _ToolUse
from riverbeam.models import NewMessage, TextPart

from tests.support.agents import invoke_body


@tool
def deploy(service: str) -> str:
    """Deploy a service."""
    return service


@tool(name="deploy")
def quiet_deploy(service: str) -> str:
    """Deploy a service, asking nobody."""
    return service


def nested(depth: int) -> Any:
    value: Any = []
    for _ in range(depth - 1):
        value = [value]
    return value


def test_two_tools_of_one_name_are_refused_naming_it() -> None:
    with pytest.raises(ValueError, match=r"given twice: \['deploy'\]"):
        ToolAgentRunner(model=ScriptedModel([]), tools=[deploy, quiet_deploy])


def test_depth_is_counted_without_recursion() -> None:
    from riverbeam.args_limits import MAX_ARGS_DEPTH, check_args_depth, check_call_args, depth_over

    assert not depth_over(nested(MAX_ARGS_DEPTH), MAX_ARGS_DEPTH)
    assert depth_over(nested(MAX_ARGS_DEPTH + 1), MAX_ARGS_DEPTH)
    assert depth_over({"a": nested(100_000)}, MAX_ARGS_DEPTH)
    with pytest.raises(BeamError) as refused:
        check_args_depth("edited_args", {"a": nested(100_000)})
    assert (refused.value.code, refused.value.status, refused.value.field) == ("BEM-045", 400, "edited_args")
    with pytest.raises(BeamError) as large:
        check_call_args("args", {"text": "é" * 40_000})  # 80,000 bytes of UTF-8
    assert (large.value.code, large.value.status) == ("BEM-046", 413)
    assert "80011 bytes" in large.value.message


class DeepAsker:
    """Another runner (not the built-in one) that asks about a call nested 300 deep."""

    def run(self, input: Any, emit: Any) -> AgentResult:
        request = ActionRequest(tool="store", args={"doc": nested(300)})
        return AgentResult(interrupted=True, action_required=[request])


def test_another_runners_request_nested_too_deep_fails_its_run_with_bem045() -> None:
    store = InMemoryStore()
    beam = RiverBeam(store)
    beam.register_agent("author", DeepAsker())
    with pytest.raises(BeamError) as failed:
        beam.invoke(invoke_body())
    assert failed.value.code == "BEM-045" and "action_required.0.args" in failed.value.message
    frames: list[Any] = []
    ack = beam.invoke(invoke_body(stream=True), on_frame=frames.append)
    run = store.get_run(ack.run_id)
    assert run is not None and run.status == "failed" and run.error is not None
    assert run.error.code == "BEM-045"
    assert [f.type for f in frames][-2:] == ["error", "done"]


def test_args_nested_past_pythons_limit_are_a_malformed_call() -> None:
    deep = "[" * 50_000 + "]" * 50_000
    human = NewMessage(role="human", content=[TextPart(text=f'call deploy {{"service": {deep}}}')])
    turn = AuthorOfflineModel().next_turn([human], [deploy], lambda text: None)
    assert turn.tool_calls == [] and "nest too deep" in turn.text
    streamed = _ToolUse("tu-1", "deploy")
    streamed.fragments.append(f'{{"service": {deep}}}')
    with pytest.raises(BeamError) as malformed:
        streamed.call()
    assert malformed.value.code == "BEM-343"


class Exiting:
    """Another runner whose framework lets a tool's SystemExit through."""

    def run(self, input: Any, emit: Any) -> AgentResult:
        raise SystemExit(2)


def test_another_runner_that_raises_systemexit_fails_its_run_and_closes_it() -> None:
    store = InMemoryStore()
    beam = RiverBeam(store)
    beam.register_agent("author", Exiting())
    with pytest.raises(BeamError) as failed:
        beam.invoke(invoke_body())
    assert failed.value.code == "BEM-500"
    ack = beam.invoke(invoke_body(stream=True), on_frame=lambda frame: None)
    run = store.get_run(ack.run_id)
    assert run is not None and run.status == "failed" and run.error is not None

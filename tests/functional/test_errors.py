"""Every error code the pipeline can raise: provoked, with its status, and nothing written."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest
from beam_store import BeamStore, InMemoryStore, Message, StepWrite, StoreBusy
from riverbeam import (
    AgentResult,
    BeamError,
    ModelTurn,
    RiverBeam,
    ScriptedModel,
    ToolAgentRunner,
    ToolCall,
    tool,
)

from tests.support.agents import PushCounter, author_beam, invoke_body, resume_body
from tests.support.stores import snapshot


@pytest.fixture
def beam(store: BeamStore) -> RiverBeam:
    return author_beam(store)[0]


def refused(beam: RiverBeam, call: Callable[[], Any], code: str, status: int) -> BeamError:
    """`call` is refused with `code` and writes nothing."""
    before = snapshot(beam.store)
    with pytest.raises(BeamError) as raised:
        call()
    assert (raised.value.code, raised.value.status) == (code, status), raised.value
    assert snapshot(beam.store) == before
    return raised.value


def interrupted(
    beam: RiverBeam, session_id: str | None = None, user: str = "u1", agent: str = "author"
) -> AgentResult:
    result = beam.invoke(invoke_body(session_id, user, agent_name=agent))
    assert isinstance(result, AgentResult) and result.interrupted
    return result


@pytest.mark.parametrize(
    "body, field",
    [
        ("{not json", None),
        ("[1, 2]", None),
        (
            {
                "agent_name": "author",
                "content": [{"type": "text", "text": "x"}],
                "auth_context": {"user_id": "u"},
            },
            "session_id",
        ),
        (invoke_body(session_id="not-a-uuid"), "session_id"),
        (invoke_body(content=[]), "content"),
        (invoke_body(content=[{"type": "image", "url": "x"}]), "content.0"),
        (invoke_body(auth_context={}), "auth_context.user_id"),
        (invoke_body(colour="blue"), "colour"),
    ],
)
def test_invoke_bad_body_is_bem001_naming_the_field(beam: RiverBeam, body: Any, field: str | None) -> None:
    error = refused(beam, lambda: beam.invoke(body), "BEM-001", 400)
    if field:
        assert error.field is not None and error.field.startswith(field.split(".")[0])
        assert field.split(".")[0] in error.message


def test_unknown_agent_is_bem021(beam: RiverBeam) -> None:
    refused(beam, lambda: beam.invoke(invoke_body(agent_name="nobody")), "BEM-021", 404)


def test_invoke_on_another_users_session_is_bem031(beam: RiverBeam) -> None:
    first = interrupted(beam, user="alice")
    refused(beam, lambda: beam.invoke(invoke_body(first.session_id, user="mallory")), "BEM-031", 403)


def test_invoke_with_an_unknown_interaction_is_bem022(beam: RiverBeam) -> None:
    first = interrupted(beam)
    body = invoke_body(first.session_id, interaction_id=str(uuid.uuid4()))
    refused(beam, lambda: beam.invoke(body), "BEM-022", 404)


def test_invoke_with_another_sessions_interaction_is_bem022(beam: RiverBeam) -> None:
    first = interrupted(beam, user="alice")
    second = interrupted(beam, user="mallory")  # not told that the interaction exists elsewhere
    body = invoke_body(second.session_id, user="mallory", interaction_id=first.interaction_id)
    refused(beam, lambda: beam.invoke(body), "BEM-022", 404)


def test_a_second_run_on_a_busy_interaction_is_bem040(store: BeamStore) -> None:
    beam, _ = author_beam(store)
    first = interrupted(beam)
    seen: list[BeamError] = []

    def during_run(frame: Any) -> None:
        if frame.type == "run_started":  # the resume's run holds the interaction now
            body = invoke_body(first.session_id, interaction_id=first.interaction_id)
            seen.append(refused(beam, lambda: beam.invoke(body), "BEM-040", 409))

    beam.resume(resume_body(first), on_frame=during_run)
    assert len(seen) == 1


def test_resume_without_interaction_is_bem062_even_when_other_fields_are_bad(beam: RiverBeam) -> None:
    first = interrupted(beam)
    body = resume_body(first)
    del body["interaction_id"]
    refused(beam, lambda: beam.resume(body), "BEM-062", 400)
    body["session_id"] = "not-a-uuid"
    refused(beam, lambda: beam.resume(body), "BEM-062", 400)


def test_resume_of_another_users_session_is_bem031(beam: RiverBeam) -> None:
    first = interrupted(beam, user="alice")
    refused(beam, lambda: beam.resume(resume_body(first, user="mallory")), "BEM-031", 403)
    assert beam.store.get_action(first.action_required[0].action_id).status == "pending"  # type: ignore[union-attr]


def test_resume_of_an_unknown_session_is_bem020(beam: RiverBeam) -> None:
    first = interrupted(beam)
    body = resume_body(first) | {"session_id": str(uuid.uuid4())}
    refused(beam, lambda: beam.resume(body), "BEM-020", 404)


def test_action_id_that_is_not_a_uuid_is_bem063_not_bem001(beam: RiverBeam) -> None:
    first = interrupted(beam)
    body = resume_body(first)
    body["actions"][0]["action_id"] = "42"
    error = refused(beam, lambda: beam.resume(body), "BEM-063", 400)
    assert error.field == "actions.0.action_id"


def test_unknown_action_is_bem027(beam: RiverBeam) -> None:
    first = interrupted(beam)
    body = resume_body(first)
    body["actions"][0]["action_id"] = str(uuid.uuid4())
    refused(beam, lambda: beam.resume(body), "BEM-027", 404)


def test_another_users_action_is_bem027(beam: RiverBeam) -> None:
    theirs = interrupted(beam, user="alice")
    mine = interrupted(beam, user="bob")
    body = resume_body(mine, user="bob")
    body["actions"][0]["action_id"] = theirs.action_required[0].action_id
    refused(beam, lambda: beam.resume(body), "BEM-027", 404)


def test_action_of_another_interaction_is_bem064(beam: RiverBeam) -> None:
    first = interrupted(beam)
    second = beam.invoke(invoke_body(first.session_id))
    assert isinstance(second, AgentResult)
    body = resume_body(first)
    body["interaction_id"] = second.interaction_id
    refused(beam, lambda: beam.resume(body), "BEM-064", 400)


def test_interaction_of_another_session_is_bem065(beam: RiverBeam) -> None:
    first = interrupted(beam)
    other = interrupted(beam)
    body = resume_body(first) | {"session_id": other.session_id}
    refused(beam, lambda: beam.resume(body), "BEM-065", 400)


def test_resolved_action_is_bem066(beam: RiverBeam) -> None:
    first = interrupted(beam)
    beam.resume(resume_body(first))
    refused(beam, lambda: beam.resume(resume_body(first)), "BEM-066", 400)
    refused(beam, lambda: beam.resume(resume_body(first, status="cancelled")), "BEM-066", 400)


@pytest.mark.parametrize(
    "payload",
    [
        {"tool": "rm_rf", "args": {"ref": "docs/update"}},
        {"tool": "git_push", "args": {"ref": "main"}},
        {"tool": "git_push", "args": {"ref": "docs/update", "force": True}},
    ],
)
def test_payload_that_differs_from_the_stored_action_is_bem067(
    beam: RiverBeam, payload: dict[str, Any]
) -> None:
    first = interrupted(beam)
    body = resume_body(first)
    body["actions"][0]["payload"] = payload
    refused(beam, lambda: beam.resume(body), "BEM-067", 400)


def counting_beam(store: BeamStore) -> tuple[RiverBeam, list[dict[str, Any]]]:
    """An agent that asks to run `count` with numbers, booleans and nesting in its args."""
    ran: list[dict[str, Any]] = []

    @tool(confirm_required=True)
    def count(n: int, flags: list[Any]) -> str:
        """Count."""
        ran.append({"n": n, "flags": flags})
        return "counted"

    call = ToolCall(name="count", args={"n": 1, "flags": [0, {"on": 1}]})
    model = ScriptedModel([ModelTurn(tool_calls=[call]), ModelTurn(text="done")])
    beam = RiverBeam(store)
    beam.register_agent("counter", ToolAgentRunner(model=model, tools=[count]))
    return beam, ran


@pytest.mark.parametrize(
    "args",
    [
        {"n": True, "flags": [0, {"on": 1}]},
        {"n": 1, "flags": [False, {"on": 1}]},
        {"n": 1, "flags": [0, {"on": True}]},
        {"n": "1", "flags": [0, {"on": 1}]},
        {"n": 1, "flags": [0, {"on": 1}, None]},
    ],
)
def test_payload_args_are_compared_type_exactly(store: BeamStore, args: dict[str, Any]) -> None:
    beam, ran = counting_beam(store)
    first = interrupted(beam, agent="counter")
    body = resume_body(first) | {"agent_name": "counter"}
    body["actions"][0]["payload"] = {"tool": "count", "args": args}
    refused(beam, lambda: beam.resume(body), "BEM-067", 400)
    assert ran == []


def test_payload_numbers_compare_by_value(store: BeamStore) -> None:
    beam, ran = counting_beam(store)
    first = interrupted(beam, agent="counter")
    body = resume_body(first) | {"agent_name": "counter"}
    body["actions"][0]["payload"] = {"tool": "count", "args": {"n": 1.0, "flags": [0.0, {"on": 1}]}}
    beam.resume(body)
    assert ran == [{"n": 1, "flags": [0, {"on": 1}]}]


def test_content_over_the_limit_is_413_and_writes_nothing(beam: RiverBeam) -> None:
    body = invoke_body(content=[{"type": "text", "text": "é" * 140_000}])
    error = refused(beam, lambda: beam.invoke(body), "BEM-002", 413)
    assert error.field == "content"


def test_resume_naming_another_agent_is_bem068(beam: RiverBeam) -> None:
    counter = PushCounter()
    beam.register_agent(
        "other", ToolAgentRunner(model=ScriptedModel([ModelTurn(text="hi")]), tools=[counter.tool()])
    )
    first = interrupted(beam)
    body = resume_body(first) | {"agent_name": "other"}
    refused(beam, lambda: beam.resume(body), "BEM-068", 400)
    assert counter.pushed == []


@pytest.mark.parametrize(
    "mutate",
    [
        lambda b: b.update(actions=[]),
        lambda b: b["actions"][0].update(status="approved"),
        lambda b: b["actions"][0].update(request_id="nope"),
        lambda b: b.update(actions=b["actions"] * 2),
        lambda b: b.pop("auth_context"),
    ],
)
def test_resume_bad_body_is_bem001(beam: RiverBeam, mutate: Callable[[dict[str, Any]], Any]) -> None:
    first = interrupted(beam)
    body = resume_body(first)
    mutate(body)
    refused(beam, lambda: beam.resume(body), "BEM-001", 400)


def test_a_refused_resume_resolves_none_of_its_actions(store: BeamStore) -> None:
    counter = PushCounter()
    model = ScriptedModel(
        [
            ModelTurn(
                tool_calls=[
                    ToolCall(name="git_push", args={"ref": "a"}),
                    ToolCall(name="git_push", args={"ref": "b"}),
                ]
            )
        ]
    )
    beam = RiverBeam(store)
    beam.register_agent("author", ToolAgentRunner(model=model, tools=[counter.tool()]))
    first = interrupted(beam)
    assert len(first.action_required) == 2
    good, bad = first.action_required
    body = resume_body(first)
    body["actions"] = [
        {
            "action_id": good.action_id,
            "status": "submitted",
            "payload": {"tool": "git_push", "args": good.args},
        },
        {
            "action_id": bad.action_id,
            "status": "submitted",
            "payload": {"tool": "git_push", "args": {"ref": "z"}},
        },
    ]
    refused(beam, lambda: beam.resume(body), "BEM-067", 400)
    assert all(store.get_action(a.action_id).status == "pending" for a in first.action_required)  # type: ignore[union-attr]
    assert counter.pushed == []


def test_an_agent_that_crashes_is_bem500_without_internals(store: BeamStore) -> None:
    class Broken:
        def run(self, input: Any, emit: Any) -> AgentResult:
            raise KeyError("secret-internal-detail")

    beam = RiverBeam(store)
    beam.register_agent("author", Broken())
    body = invoke_body()
    with pytest.raises(BeamError) as raised:
        beam.invoke(body)
    assert (raised.value.code, raised.value.status) == ("BEM-500", 500)
    assert "secret" not in raised.value.message
    runs = [m.run_id for m in store.list_messages(body["session_id"])]
    run = store.get_run(runs[0])
    assert (
        run is not None and run.status == "failed" and run.error is not None and run.error.code == "BEM-500"
    )
    interaction = store.get_interaction(run.interaction_id)
    assert interaction is not None and interaction.status == "failed" and interaction.active_run_id is None


def test_a_run_whose_closing_write_fails_is_closed_failed_not_left_running() -> None:
    class RefusesBigCloses(InMemoryStore):
        def commit(self, step: StepWrite) -> list[Message]:
            if step.run_op == "close" and step.messages:
                raise StoreBusy("simulated")
            return super().commit(step)

    store = RefusesBigCloses()
    beam, _ = author_beam(store)
    body = invoke_body()
    with pytest.raises(BeamError) as raised:
        beam.invoke(body)
    assert raised.value.code == "BEM-503"
    [message] = store.list_messages(body["session_id"])
    run = store.get_run(message.run_id)
    assert (
        run is not None and run.status == "failed" and run.error is not None and run.error.code == "BEM-503"
    )
    interaction = store.get_interaction(message.interaction_id)
    assert interaction is not None and interaction.active_run_id is None and interaction.status == "failed"


@pytest.mark.parametrize("body", ["[" * 100_000, '{"a": NaN}', '{"text": "\\ud800"}'])
def test_bodies_json_cannot_carry_are_bem001(beam: RiverBeam, body: str) -> None:
    refused(beam, lambda: beam.invoke(body), "BEM-001", 400)


def test_a_non_string_action_id_is_bem063(beam: RiverBeam) -> None:
    first = interrupted(beam)
    body = resume_body(first)
    body["actions"][0]["action_id"] = 123
    refused(beam, lambda: beam.resume(body), "BEM-063", 400)


def test_ownership_is_checked_before_the_rest_of_the_body(beam: RiverBeam) -> None:
    first = interrupted(beam, user="alice")
    body = resume_body(first, user="mallory")
    body["actions"][0]["status"] = "approved"
    refused(beam, lambda: beam.resume(body), "BEM-031", 403)


def test_each_check_runs_over_every_action_before_the_next(beam: RiverBeam) -> None:
    first = interrupted(beam)
    body = resume_body(first)
    body["actions"][0]["payload"] = {"tool": "git_push", "args": {"ref": "main"}}  # would be BEM-067
    body["actions"].append({"action_id": str(uuid.uuid4()), "status": "submitted"})  # BEM-027 comes first
    refused(beam, lambda: beam.resume(body), "BEM-027", 404)


def test_a_runner_giving_an_action_id_that_is_not_a_uuid_fails_its_run(store: BeamStore) -> None:
    class BadIds:
        def run(self, input: Any, emit: Any) -> AgentResult:
            return AgentResult(action_required=[{"action_id": "call-1", "tool": "t"}])  # type: ignore[list-item]

    beam = RiverBeam(store)
    beam.register_agent("author", BadIds())
    body = invoke_body()
    with pytest.raises(BeamError) as raised:
        beam.invoke(body)
    assert raised.value.code == "BEM-500"
    [message] = store.list_messages(body["session_id"])
    assert store.list_actions(message.interaction_id) == []

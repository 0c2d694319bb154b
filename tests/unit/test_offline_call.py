"""The offline model's `call <tool> <args JSON>`: it proposes that call of any tool its agent has, so a tool
of your own can be tried end to end before there is a model; a tool it lacks or args that are not a JSON
object get words saying so, and no call."""

from __future__ import annotations

from typing import Any

import pytest
from beam_store import InMemoryStore, TextPart
from riverbeam import AgentResult, AuthorOfflineModel, NewMessage, RiverBeam, ToolAgentRunner, tool

from tests.support.agents import invoke_body, resume_body

DEPLOYED: list[dict[str, Any]] = []


@tool(confirm_required=True)
def deploy(service: str, replicas: int = 1) -> dict[str, Any]:
    """Deploy a service."""
    DEPLOYED.append({"service": service, "replicas": replicas})
    return {"deployed": service, "replicas": replicas}


def said(text: str) -> list[NewMessage]:
    return [NewMessage(role="human", type="message", content=[TextPart(text=text)])]


def test_call_proposes_that_call_with_its_args() -> None:
    turn = AuthorOfflineModel().next_turn(
        said('call deploy {"service": "web", "replicas": 2}'), [deploy], print
    )
    assert [(c.name, c.args) for c in turn.tool_calls] == [("deploy", {"service": "web", "replicas": 2})]
    bare = AuthorOfflineModel().next_turn(said("call deploy"), [deploy], print)
    assert [(c.name, c.args) for c in bare.tool_calls] == [("deploy", {})]


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ('call nuke {"all": true}', "I have no tool nuke. My tools: deploy."),
        ("call deploy {service: web}", "The args of deploy must be a JSON object: Expecting property name"),
        ('call deploy ["web"]', "The args of deploy must be a JSON object, not list."),
    ],
)
def test_what_it_cannot_call_is_answered_in_words(text: str, answer: str) -> None:
    turn = AuthorOfflineModel().next_turn(said(text), [deploy], lambda _: None)
    assert turn.tool_calls == [] and turn.text.startswith(answer)


def test_a_tool_of_your_own_end_to_end_on_the_offline_model() -> None:
    beam = RiverBeam(InMemoryStore())
    beam.register_agent("author", ToolAgentRunner(model=AuthorOfflineModel(), tools=[deploy]))
    DEPLOYED.clear()
    result = beam.invoke(invoke_body(text='call deploy {"service": "web"}'))
    assert isinstance(result, AgentResult) and result.interrupted and DEPLOYED == []
    assert [(a.tool, a.args) for a in result.action_required] == [("deploy", {"service": "web"})]
    beam.resume(resume_body(result))
    assert DEPLOYED == [{"service": "web", "replicas": 1}]
    replies = [
        p.text
        for m in beam.store.list_messages(result.session_id or "")
        if m.role == "ai"
        for p in m.content
        if isinstance(p, TextPart)
    ]
    assert replies[-1] == 'deploy answered: {"deployed": "web", "replicas": 1}'

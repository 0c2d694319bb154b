"""What is decided is what runs (issue 34), through RiverBeam in process: a call whose args do not fit its
tool's schema strictly is never put to a person (CONTRACT 3.12: no Action, an `error` tool message and
tool_result frame naming the field, the run goes on), for ToolAgentRunner and for another runner's
action_required; numbers reach the policy as numbers; an approver's edited args are decided as the call they
become (a forbid refuses the resume with BEM-081, nothing resolved; otherwise the answer stands)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

import pytest
from beam_store import InMemoryStore
from riverbeam import (
    ActionRequest,
    AgentInput,
    AgentResult,
    BeamError,
    Emit,
    ModelTurn,
    NewMessage,
    Policy,
    RiverBeam,
    ScriptedModel,
    ToolAgentRunner,
    ToolCall,
    tool,
)

from tests.support.agents import invoke_body, resume_body

RULES = """\
@id("no-force") forbid (principal, action, resource == Tool::"deploy")
  when { context.args has force && context.args.force == true };
@id("at-most-5") forbid (principal, action, resource == Tool::"deploy")
  when { context.args has replicas && context.args.replicas > 5 };
@id("ratio-cap") forbid (principal, action, resource == Tool::"deploy")
  when { context.args has ratio && context.args.ratio.greaterThan(decimal("0.5")) };
"""
COERCIBLE = [
    ({"force": 1}, "force"),
    ({"force": "true"}, "force"),
    ({"force": "yes"}, "force"),
    ({"replicas": "50"}, "replicas"),
    ({"replicas": 50.0}, "replicas"),
    ({"replicas": " 50"}, "replicas"),
]


def told(conversation: Sequence[NewMessage]) -> ModelTurn:
    """The model's answer to its last tool results: what each told it."""
    results = [p for m in conversation[-2:] if m.role == "tool" for p in m.content]
    return ModelTurn(
        text="; ".join(f"{p.name} {p.status} {p.error.code if p.error else ''}".strip() for p in results)
    )


class Deployer:
    """An agent whose model proposes `deploy` calls with the args given, then says what it was told."""

    def __init__(self, *calls: dict[str, Any], policy: str | None = RULES) -> None:
        self.ran: list[dict[str, Any]] = []
        self.frames: list[dict[str, Any]] = []

        @tool(confirm_required=True)
        def deploy(
            service: str, replicas: int = 1, force: bool = False, ratio: float = 0.0
        ) -> dict[str, Any]:
            """Deploy a service."""
            self.ran.append({"service": service, "replicas": replicas, "force": force, "ratio": ratio})
            return {"deployed": service}

        self.tool = deploy
        self.store = InMemoryStore()
        self.beam = RiverBeam(self.store)
        turns = [
            ModelTurn(tool_calls=[ToolCall(name="deploy", args={"service": "web", **c}) for c in calls]),
            told,
        ]
        runner = ToolAgentRunner(model=ScriptedModel(turns * 3), tools=[deploy])
        self.beam.register_agent("author", runner, policy=Policy(policy) if policy is not None else None)

    def invoke(self) -> AgentResult:
        result = self.beam.invoke(invoke_body(), on_frame=lambda f: self.frames.append(f.model_dump()))
        assert isinstance(result, AgentResult)
        return result

    def tool_errors(self, result: AgentResult) -> list[tuple[str, str, str]]:
        """(status, code, message) of each tool message of the session."""
        return [
            (p.status, p.error.code if p.error else "", p.error.message if p.error else "")
            for m in self.store.list_messages(str(result.session_id))
            if m.role == "tool"
            for p in m.content
        ]


@pytest.mark.parametrize("policy", [RULES, None], ids=["policy", "no-policy"])
@pytest.mark.parametrize(("args", "field"), COERCIBLE)
def test_a_call_whose_args_do_not_fit_is_never_asked_and_the_run_goes_on(
    args: dict[str, Any], field: str, policy: str | None
) -> None:
    agent = Deployer(args, policy=policy)
    result = agent.invoke()
    assert not result.interrupted and result.action_required == []
    assert agent.store.list_actions(str(result.interaction_id)) == []
    assert agent.ran == [] and result.text() == "deploy error BEM-332"
    [(status, code, message)] = agent.tool_errors(result)
    assert (status, code) == ("error", "BEM-332") and f"{field}:" in message
    [frame] = [f for f in agent.frames if f["type"] == "tool_result"]
    assert (frame["status"], frame["error"]["code"]) == ("error", "BEM-332")
    run = agent.store.get_run(str(result.run_id))
    assert run is not None and run.status == "completed"


def test_a_decimal_is_decided_as_a_number_and_one_cedar_cannot_hold_is_refused_unasked() -> None:
    agent = Deployer({"ratio": 0.75}, {"ratio": 0.12345})
    result = agent.invoke()
    assert not result.interrupted and agent.ran == []
    [denied] = agent.store.list_actions(str(result.interaction_id))
    assert denied.args["ratio"] == 0.75 and denied.status == "denied"
    assert denied.response is not None and denied.response.by.model_dump()["policy_ids"] == ["ratio-cap"]
    errors = agent.tool_errors(result)
    assert [e[:2] for e in errors] == [("refused", "BEM-080"), ("error", "BEM-082")]
    assert "args.ratio" in errors[1][2]


def test_a_forbid_whose_condition_errors_denies_the_call_naming_it() -> None:
    lax = '@id("cap") forbid (principal, action, resource) when { context.args.replicas > 5 };'
    agent = Deployer({"force": False}, policy=lax)  # no replicas: the condition errors
    result = agent.invoke()
    assert not result.interrupted and agent.ran == []
    [denied] = agent.store.list_actions(str(result.interaction_id))
    assert denied.status == "denied" and denied.response is not None
    assert denied.response.by.model_dump()["policy_ids"] == ["cap"]
    [(_, code, message)] = agent.tool_errors(result)
    assert code == "BEM-080" and "cap" in message and "fails on these args" in message


class AskingRunner:
    """A runner of its own that asks for each deploy its message lists and checks args with the tool's
    schema (validate_args), then reports how each was answered."""

    def __init__(self, deploy: Any) -> None:
        self.deploy = deploy
        self.answers: list[tuple[str, str | None]] = []

    def validate_args(self, tool: str, args: dict[str, Any]) -> list[tuple[str, str]]:
        return list(self.deploy.problems(args)) if tool == "deploy" else []

    def run(self, input: AgentInput, emit: Emit) -> AgentResult:
        if input.actions:
            self.answers += [(a.status, a.reason) for a in input.actions]
            return AgentResult(content=[{"type": "text", "text": "answered"}])
        asks = [
            ActionRequest(tool="deploy", args={"service": "web", "replicas": "50"}),
            ActionRequest(tool="deploy", args={"service": "web", "replicas": 2}),
        ]
        return AgentResult(interrupted=True, action_required=asks)


@pytest.mark.parametrize("policy", [RULES, None], ids=["policy", "no-policy"])
def test_another_runners_request_that_does_not_fit_is_never_asked(policy: str | None) -> None:
    agent = Deployer()
    runner = AskingRunner(agent.tool)
    agent.beam.register_agent("author", runner, policy=Policy(policy) if policy is not None else None)
    result = agent.invoke()
    [pending] = agent.store.list_actions(str(result.interaction_id))
    assert pending.args == {"service": "web", "replicas": 2} and pending.status == "pending"
    assert [r.args for r in result.action_required] == [{"service": "web", "replicas": 2}]
    [(status, reason)] = runner.answers
    assert status == "cancelled" and reason is not None and "BEM-332" in reason and "replicas" in reason
    assert [e[:2] for e in agent.tool_errors(result)] == [("error", "BEM-332")]


def edit(agent: Deployer, asked: AgentResult, edited: dict[str, Any]) -> BeamError | None:
    try:
        agent.beam.resume(resume_body(asked, edited_args=edited, request_id=str(uuid.uuid4())))
    except BeamError as error:
        return error
    return None


def test_edited_args_a_forbid_covers_refuse_the_resume_and_others_run() -> None:
    agent = Deployer({"replicas": 2})
    asked = agent.invoke()
    [action] = asked.action_required
    refused = edit(agent, asked, {"service": "web", "replicas": 50})
    assert refused is not None and (refused.code, refused.status) == ("BEM-081", 400)
    assert "at-most-5" in refused.message and refused.field == "actions.0.edited_args"
    forced = edit(agent, asked, {"service": "web", "force": True})
    assert forced is not None and forced.code == "BEM-081" and "no-force" in forced.message
    stored = agent.store.get_action(str(action.action_id))
    assert stored is not None and stored.status == "pending" and agent.ran == []
    assert edit(agent, asked, {"service": "web", "replicas": 4}) is None  # asks: the approver's answer stands
    assert agent.ran == [{"service": "web", "replicas": 4, "force": False, "ratio": 0.0}]


def test_edited_args_are_checked_strictly_and_by_what_the_policy_can_read() -> None:
    agent = Deployer({"replicas": 2})
    asked = agent.invoke()
    coerced = edit(agent, asked, {"service": "web", "replicas": "4"})
    assert coerced is not None and (coerced.code, coerced.field) == (
        "BEM-001",
        "actions.0.edited_args.replicas",
    )
    unreadable = edit(agent, asked, {"service": "web", "ratio": 0.12345})
    assert unreadable is not None and (unreadable.code, unreadable.status) == ("BEM-082", 400)
    assert unreadable.field == "actions.0.edited_args.ratio"
    stored = agent.store.get_action(str(asked.action_required[0].action_id))
    assert stored is not None and stored.status == "pending" and agent.ran == []

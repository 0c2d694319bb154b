"""The pipeline decides every proposed tool call by the agent's policy (CONTRACT 10), on every store:
allow runs it unasked (a tool that asks by itself is recorded as an Action resolved by the policy), ask
waits as before, deny never runs it (a `denied` Action, a refused tool message and frame, the agent told,
the run goes on). Who decided is on the record, in the frames and in the approval events; the caller's
groups are the principal's parents; a runner other than ToolAgentRunner has its action_required decided."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

import pytest
from beam_store import BeamStore
from riverbeam import (
    ActionRequest,
    AgentInput,
    AgentResult,
    Emit,
    EventLog,
    ModelTurn,
    NewMessage,
    Policy,
    RiverBeam,
    ScriptedModel,
    ToolAgentRunner,
    ToolCall,
    tool,
)

from tests.support.agents import PushCounter, invoke_body, resume_body

POLICY = """\
@id("docs-unattended") permit (principal, action == Action::"run_unattended", resource == Tool::"git_push")
  when { context.args has ref && context.args.ref like "docs/*" };
@id("no-force") forbid (principal, action, resource == Tool::"git_push")
  when { context.args has force && context.args.force == true };
@id("releasers-main") permit (principal in Group::"releasers", action == Action::"run_unattended",
  resource == Tool::"git_push") when { context.args has ref && context.args.ref == "main" };
@id("no-secrets") forbid (principal, action, resource == Tool::"read_file")
  when { context.args has path && context.args.path like "*secret*" };
"""


def told(conversation: Sequence[NewMessage]) -> ModelTurn:
    """The model's answer to the tool results of its last turn: what each told it."""
    results = [p for m in conversation[-2:] if m.role == "tool" for p in m.content]
    said = [f"{p.name} {p.status} {p.error.code if p.error else ''}".strip() for p in results]
    return ModelTurn(text="; ".join(said))


class Agent:
    """An author with a counted git_push (asks by itself; takes `force`, so a forced push fits its schema
    and is the policy's to deny) and a counted read_file (does not ask)."""

    def __init__(self, store: BeamStore, *calls: ToolCall, policy: str | None = POLICY) -> None:
        self.pushed = PushCounter()
        self.reads: list[str] = []
        self.frames: list[dict[str, Any]] = []

        @tool(confirm_required=True)
        def git_push(ref: str, force: bool = False) -> dict[str, str]:
            """Push a branch (`force`: what the policy forbids)."""
            self.pushed.pushed.append(ref)
            return {"ref": ref}

        @tool
        def read_file(path: str) -> str:
            """Read a file."""
            self.reads.append(path)
            return "text"

        model = ScriptedModel([ModelTurn(tool_calls=list(calls)), told] * 3)
        self.events = EventLog()
        self.beam = RiverBeam(store, events=self.events)
        runner = ToolAgentRunner(model=model, tools=[git_push, read_file])
        self.beam.register_agent("author", runner, policy=Policy(policy) if policy is not None else None)
        self.store = store

    def invoke(self, **body: Any) -> AgentResult:
        result = self.beam.invoke(invoke_body(**body), on_frame=lambda f: self.frames.append(f.model_dump()))
        assert isinstance(result, AgentResult)
        return result

    def actions(self, result: AgentResult) -> dict[str, Any]:
        assert result.interaction_id is not None
        listed = self.store.list_actions(result.interaction_id)
        return {a.args.get("ref", a.args.get("path")): a for a in listed}

    def frames_of(self, kind: str) -> list[dict[str, Any]]:
        return [f for f in self.frames if f["type"] == kind]


def push(ref: str, **more: Any) -> ToolCall:
    return ToolCall(name="git_push", args={"ref": ref, **more})


def test_an_allowed_push_runs_unasked_and_is_resolved_by_the_policy(store: BeamStore) -> None:
    agent = Agent(store, push("docs/update"))
    result = agent.invoke()
    assert agent.pushed.pushed == ["docs/update"]
    assert not result.interrupted and result.text() == "git_push ok"
    action = agent.actions(result)["docs/update"]
    assert action.status == "resolved" and action.run_args == {"ref": "docs/update"}
    assert action.response.by.model_dump() == {"kind": "policy", "policy_ids": ["docs-unattended"]}
    assert action.outcome is not None and action.outcome.status == "ok"
    [call] = agent.frames_of("tool_call")
    assert (call["decision"], call["confirm_required"]) == ("allow", False)
    assert call["decided_by"] == {"kind": "policy", "policy_ids": ["docs-unattended"]}
    [decided] = [e for e in agent.events if e.detail_type == "Approval Decided"]
    assert decided.detail["by"] == {"kind": "policy", "policy_ids": ["docs-unattended"]}
    assert decided.detail["action_id"] == action.action_id
    assert not [e for e in agent.events if e.detail_type == "Approval Requested"]
    assert agent.beam.read_action(action.action_id, user_id="u1").response.by.kind == "policy"


def test_a_denied_push_never_runs_and_the_agent_is_told(store: BeamStore) -> None:
    agent = Agent(store, push("docs/update", force=True))
    result = agent.invoke()
    assert agent.pushed.pushed == []  # the tool was never called
    assert not result.interrupted and result.text() == "git_push refused BEM-080"
    action = agent.actions(result)["docs/update"]
    assert action.status == "denied" and action.outcome is None and action.run_args is None
    assert action.response.by.model_dump() == {"kind": "policy", "policy_ids": ["no-force"]}
    [frame] = agent.frames_of("tool_result")
    assert frame["status"] == "refused" and frame["error"]["code"] == "BEM-080"
    assert "no-force" in frame["error"]["message"]
    assert agent.frames_of("tool_call")[0]["decision"] == "deny"
    tool_messages = [m for m in store.list_messages(result.session_id) if m.role == "tool"]
    assert [(p.status, p.error.code) for m in tool_messages for p in m.content] == [("refused", "BEM-080")]
    run = store.get_run(result.run_id)
    assert run is not None and run.status == "completed"
    [decided] = [e for e in agent.events if e.detail_type == "Approval Decided"]
    assert decided.detail["status"] == "denied" and decided.detail["by"]["kind"] == "policy"


def test_a_push_the_policy_does_not_cover_asks_and_a_person_decides(store: BeamStore) -> None:
    agent = Agent(store, push("main"))
    result = agent.invoke()
    assert result.interrupted and agent.pushed.pushed == []
    assert agent.frames_of("tool_call")[0]["decision"] == "ask"
    assert agent.actions(result)["main"].status == "pending"
    agent.beam.resume(resume_body(result))
    action = agent.actions(result)["main"]
    assert action.status == "resolved" and agent.pushed.pushed == ["main"]
    assert action.response.by.model_dump() == {"kind": "person", "user_id": "u1"}


def test_the_callers_groups_are_the_principals_parents(store: BeamStore) -> None:
    agent = Agent(store, push("main"))
    released = agent.invoke(auth_context={"user_id": "u1", "groups": ["releasers"]})
    assert not released.interrupted and agent.pushed.pushed == ["main"]
    assert agent.actions(released)["main"].response.by.policy_ids == ["releasers-main"]
    assert agent.invoke(auth_context={"user_id": "u1", "groups": ["dev"]}).interrupted


def test_a_tool_that_runs_unasked_is_denied_by_a_forbid_and_recorded(store: BeamStore) -> None:
    read = ToolCall(name="read_file", args={"path": "notes.txt"})
    secret = ToolCall(name="read_file", args={"path": "secret.txt"})
    agent = Agent(store, read, secret)
    result = agent.invoke()
    assert agent.reads == ["notes.txt"] and result.text() == "read_file ok; read_file refused BEM-080"
    actions = agent.actions(result)
    assert set(actions) == {"secret.txt"}  # a call that runs and would never have asked is no Action
    assert actions["secret.txt"].status == "denied"


def test_without_a_policy_a_tool_that_asks_by_itself_asks(store: BeamStore) -> None:
    agent = Agent(store, push("docs/update"), ToolCall(name="read_file", args={"path": "a"}), policy=None)
    result = agent.invoke()
    assert result.interrupted and agent.reads == ["a"] and agent.pushed.pushed == []
    assert {a: x.status for a, x in agent.actions(result).items()} == {"docs/update": "pending"}
    assert agent.frames_of("tool_call")[0]["decision"] == "ask"


class AskingRunner:
    """A runner of its own: asks for every push it is told to make, then reports what it was answered."""

    def __init__(self, counter: PushCounter) -> None:
        self.counter = counter
        self.push = counter.tool()

    def run(self, input: AgentInput, emit: Emit) -> AgentResult:
        if input.actions:
            for answer in input.actions:
                if answer.status == "submitted":
                    self.push.invoke(answer.args)
            said = ", ".join(f"{a.args['ref']} {a.status}" for a in input.actions)
            return AgentResult(content=[{"type": "text", "text": said}])
        refs = input.content[0].text.split()[1:]
        forced = {"force": True}
        args = [{"ref": r, **(forced if r == "forced" else {})} for r in refs]
        asks = [ActionRequest(tool="git_push", args=a) for a in args]
        return AgentResult(interrupted=True, action_required=asks)


@pytest.mark.parametrize("with_ask", [False, True])
def test_another_runners_requests_are_decided_and_it_goes_on(store: BeamStore, with_ask: bool) -> None:
    counter = PushCounter()
    beam = RiverBeam(store)
    beam.register_agent("author", AskingRunner(counter), policy=Policy(POLICY))
    refs = "docs/a forced" + (" main" if with_ask else "")
    result = beam.invoke(invoke_body(text=f"push {refs}"))
    assert isinstance(result, AgentResult) and counter.pushed == ["docs/a"]
    assert result.text() == "docs/a submitted, forced cancelled"
    statuses = {a.args["ref"]: a.status for a in store.list_actions(str(result.interaction_id))}
    assert statuses == {"docs/a": "resolved", "forced": "denied", **({"main": "pending"} if with_ask else {})}
    assert [r.args["ref"] for r in result.action_required] == (["main"] if with_ask else [])


class ReaskingRunner:
    """A runner of its own that asks for each push of the interaction's message under ids of its own, and
    on a resume asks again for those not answered yet (a partial resume)."""

    def __init__(self, counter: PushCounter) -> None:
        self.push = counter.tool()

    def run(self, input: AgentInput, emit: Emit) -> AgentResult:
        asked = [m for m in input.history if m.role == "human" and m.interaction_id == input.interaction_id]
        refs = asked[0].content[0].text.split()[1:]  # type: ignore[union-attr]
        ids = {r: str(uuid.uuid5(uuid.NAMESPACE_URL, f"{input.interaction_id}/{r}")) for r in refs}
        for answer in input.actions:
            if answer.status == "submitted":
                self.push.invoke(answer.args)
        answered = {a.action_id for a in input.actions}
        waiting = [ActionRequest(action_id=ids[r], tool="git_push", args={"ref": r}) for r in refs]
        waiting = [w for w in waiting if w.action_id not in answered]
        return AgentResult(interrupted=bool(waiting), action_required=waiting)


def test_an_action_asked_again_on_a_resume_is_not_decided_again(store: BeamStore) -> None:
    counter = PushCounter()
    beam = RiverBeam(store)
    beam.register_agent("author", ReaskingRunner(counter), policy=Policy(POLICY))
    result = beam.invoke(invoke_body(text="push main other"))
    assert isinstance(result, AgentResult) and len(result.action_required) == 2
    other = next(r for r in result.action_required if r.args["ref"] == "other")
    body = resume_body(result)
    body["actions"] = [{"action_id": other.action_id, "status": "submitted"}]
    body["auth_context"]["groups"] = ["releasers"]
    beam.resume(body)
    # main waits as it was asked: the releasers' group of the resume does not decide it afresh
    statuses = {a.args["ref"]: a.status for a in store.list_actions(str(result.interaction_id))}
    assert statuses == {"main": "pending", "other": "resolved"} and counter.pushed == ["other"]

"""Standing grants ("always allow", CONTRACT 10) on every store: an approval that grants `tool` or `args`
lets the session's later calls it covers run unasked (an Action resolved by the grant), never over a
policy's forbid, per session only; a tool that is not grantable refuses the grant and nothing resolves;
grants are listed and revoked by the session's owner alone."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from beam_store import BeamStore, TextPart
from riverbeam import (
    ActionRequest,
    AgentInput,
    AgentResult,
    Approvals,
    AuthorOfflineModel,
    BeamError,
    Emit,
    Policy,
    RiverBeam,
    ToolAgentRunner,
    tool,
)

from tests.support.agents import invoke_body, resume_body

FORBIDS = """\
@id("no-force") forbid (principal, action, resource == Tool::"git_push")
  when { context.args has force && context.args.force == true };
@id("main-asks") forbid (principal, action == Action::"run_unattended", resource == Tool::"git_push")
  when { context.args has ref && context.args.ref == "main" };
"""


class Author:
    """The offline author ("push X", or "call git_push {...}") with a counted git_push."""

    def __init__(
        self, store: BeamStore, *, grantable: bool = True, policy: str | None = None, **register: Any
    ) -> None:
        self.pushed: list[dict[str, Any]] = []

        @tool(confirm_required=True, grantable=grantable)
        def git_push(ref: str, force: bool = False) -> dict[str, str]:
            """Push a branch."""
            self.pushed.append({"ref": ref, "force": force})
            return {"ref": ref}

        self.store = store
        self.beam = RiverBeam(store)
        runner = ToolAgentRunner(model=AuthorOfflineModel(), tools=[git_push])
        self.beam.register_agent(
            "author", runner, policy=Policy(policy) if policy is not None else None, **register
        )
        self.session_id = str(uuid.uuid4())

    def say(self, text: str, session_id: str | None = None) -> AgentResult:
        result = self.beam.invoke(invoke_body(session_id or self.session_id, text=text))
        assert isinstance(result, AgentResult)
        return result

    def approve(self, result: AgentResult, user: str = "u1", **envelope: Any) -> None:
        self.beam.resume(resume_body(result, user=user, **envelope))

    def only_action(self, result: AgentResult) -> Any:
        assert result.interaction_id is not None
        [action] = self.store.list_actions(result.interaction_id)
        return action


def test_a_tool_grant_lets_the_sessions_later_pushes_run_unasked(store: BeamStore) -> None:
    author = Author(store)
    asked = author.say("Push main")
    assert asked.interrupted and asked.action_required[0].grantable is True
    author.approve(asked, grant="tool")
    [grant] = author.beam.list_grants(author.session_id, user_id="u1")
    assert (grant.tool, grant.scope, grant.args_sha256, grant.created_by) == ("git_push", "tool", None, "u1")
    later = author.say("Push release/1")
    assert not later.interrupted
    assert [p["ref"] for p in author.pushed] == ["main", "release/1"]
    action = author.only_action(later)
    assert action.status == "resolved" and action.outcome is not None and action.outcome.status == "ok"
    assert action.response.by.model_dump() == {"kind": "grant", "grant_id": grant.grant_id}


def test_an_args_grant_covers_exactly_those_args(store: BeamStore) -> None:
    author = Author(store)
    author.approve(author.say("Push main"), grant="args")
    [grant] = author.beam.list_grants(author.session_id, user_id="u1")
    assert (
        grant.scope == "args" and grant.args_sha256 == author.only_action(author.say("Push main")).args_sha256
    )
    assert len(author.pushed) == 2
    assert author.say("Push docs/update").interrupted
    assert len(author.pushed) == 2


def test_a_grant_never_overrides_a_forbid(store: BeamStore) -> None:
    author = Author(store, policy=FORBIDS)
    author.approve(author.say("Push docs/a"), grant="tool")
    forced = author.say('call git_push {"ref": "docs/b", "force": true}')
    denied = author.only_action(forced)
    assert denied.status == "denied" and denied.response.by.policy_ids == ["no-force"]
    assert author.say("Push main").interrupted  # run_unattended forbidden: it asks, grant or not
    assert not author.say("Push docs/c").interrupted  # what no forbid names, the grant covers
    assert [p["ref"] for p in author.pushed] == ["docs/a", "docs/c"]


def test_a_tool_that_is_not_grantable_refuses_the_grant_and_nothing_resolves(store: BeamStore) -> None:
    author = Author(store, grantable=False)
    asked = author.say("Push main")
    assert asked.action_required[0].grantable is False  # a client offers no "always allow"
    assert author.only_action(asked).grantable is False
    with pytest.raises(BeamError) as refused:
        author.approve(asked, grant="tool")
    assert (refused.value.code, refused.value.status) == ("BEM-085", 400)
    assert "git_push" in str(refused.value)
    assert author.only_action(asked).status == "pending" and author.pushed == []
    assert author.beam.list_grants(author.session_id, user_id="u1") == []
    author.approve(asked)  # approved without a grant, it runs
    assert len(author.pushed) == 1


def test_a_grant_needs_the_sessions_owner(store: BeamStore) -> None:
    author = Author(store, approvals={"git_push": Approvals(users=("ana",))})
    asked = author.say("Push main")
    assert asked.action_required[0].grantable is True  # for its owner: ana answers as an approver
    with pytest.raises(BeamError) as refused:
        author.approve(asked, user="ana", grant="tool")
    assert (refused.value.code, refused.value.status) == ("BEM-086", 403)
    assert author.only_action(asked).status == "pending" and author.pushed == []


def test_a_tool_that_needs_a_quorum_or_four_eyes_is_not_grantable(store: BeamStore) -> None:
    four_eyes = Author(store, approvals={"git_push": Approvals(users=("ana",), self_approval=False)})
    assert four_eyes.say("Push main").action_required[0].grantable is False
    author = Author(store, approvals={"git_push": Approvals(users=("ana",), required=2)})
    asked = author.say("Push main")
    assert asked.action_required[0].grantable is False
    with pytest.raises(BeamError) as refused:
        author.approve(asked, grant="tool")  # the owner: a grant would skip the second approval
    assert (refused.value.code, refused.value.status) == ("BEM-085", 400)
    action = author.only_action(asked)
    assert action.status == "pending" and action.votes == [] and author.pushed == []


def test_a_revoked_grant_asks_again(store: BeamStore) -> None:
    author = Author(store)
    author.approve(author.say("Push main"), grant="tool")
    [grant] = author.beam.list_grants(author.session_id, user_id="u1")
    author.beam.revoke_grant(author.session_id, grant.grant_id, user_id="u1")
    assert author.beam.list_grants(author.session_id, user_id="u1") == []
    assert author.say("Push main").interrupted and len(author.pushed) == 1
    with pytest.raises(BeamError) as again:
        author.beam.revoke_grant(author.session_id, grant.grant_id, user_id="u1")
    assert (again.value.code, again.value.status) == ("BEM-087", 404)


def test_grants_are_per_session(store: BeamStore) -> None:
    author = Author(store)
    author.approve(author.say("Push main"), grant="tool")
    other = str(uuid.uuid4())
    assert author.say("Push main", session_id=other).interrupted
    assert author.beam.list_grants(other, user_id="u1") == []


def test_another_user_can_neither_list_nor_revoke(store: BeamStore) -> None:
    author = Author(store)
    author.approve(author.say("Push main"), grant="tool")
    [grant] = author.beam.list_grants(author.session_id, user_id="u1")
    for attempt in (
        lambda: author.beam.list_grants(author.session_id, user_id="mallory"),
        lambda: author.beam.revoke_grant(author.session_id, grant.grant_id, user_id="mallory"),
    ):
        with pytest.raises(BeamError) as refused:
            attempt()
        assert (refused.value.code, refused.value.status) == ("BEM-020", 404)
    assert author.beam.list_grants(author.session_id, user_id="u1") == [grant]


class AskingRunner:
    """A runner of its own (not ToolAgentRunner): asks for each push it is told of, and says what it was
    answered, pushing those approved."""

    def __init__(self) -> None:
        self.pushed: list[str] = []

    def run(self, input: AgentInput, emit: Emit) -> AgentResult:
        if input.actions:
            self.pushed += [a.args["ref"] for a in input.actions if a.status == "submitted"]
            said = ", ".join(f"{a.args['ref']} {a.status}" for a in input.actions)
            return AgentResult(content=[TextPart(text=said)])
        refs = input.content[0].text.split()[1:]  # type: ignore[union-attr]
        asks = [ActionRequest(tool="git_push", args={"ref": r}) for r in refs]
        return AgentResult(interrupted=True, action_required=asks)


def test_another_runners_requests_a_grant_covers_are_answered_without_a_policy(store: BeamStore) -> None:
    runner = AskingRunner()
    beam = RiverBeam(store)
    beam.register_agent("author", runner)
    session_id = str(uuid.uuid4())
    asked = beam.invoke(invoke_body(session_id, text="push main"))
    assert isinstance(asked, AgentResult) and asked.action_required[0].grantable is True
    beam.resume(resume_body(asked, grant="args"))
    later = beam.invoke(invoke_body(session_id, text="push main docs/a"))
    assert isinstance(later, AgentResult)
    assert [r.args for r in later.action_required] == [{"ref": "docs/a"}]  # not granted: it waits
    assert runner.pushed == ["main", "main"] and later.text() == "main submitted"
    actions = {a.args["ref"]: a for a in store.list_actions(str(later.interaction_id))}
    assert actions["main"].status == "resolved" and actions["main"].response is not None
    assert actions["main"].response.by.kind == "grant" and actions["docs/a"].status == "pending"

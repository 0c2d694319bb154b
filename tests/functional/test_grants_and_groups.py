"""Grants and groups in process, on every store: a grant is read at each call that would ask (one revoked
while the run works covers none of its later calls), covers only its own agent's tool, and never a tool
that now needs four eyes or a quorum; a run resumed by an approver decides with its requester's groups, as
do the approver's edited args."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from beam_store import BeamStore
from riverbeam import (
    AgentResult,
    Approvals,
    AuthorOfflineModel,
    BeamError,
    ModelTurn,
    Policy,
    RiverBeam,
    ScriptedModel,
    ToolAgentRunner,
    ToolCall,
    tool,
)

from tests.support.agents import invoke_body, resume_body

RELEASES = """\
@id("releasers-unattended")
permit (principal in Group::"releasers", action == Action::"run_unattended", resource == Tool::"git_push");
@id("no-release-for-interns")
forbid (principal in Group::"interns", action == Action::"run", resource == Tool::"git_push")
  when { context.args.ref like "release/*" };
"""


class Pushes:
    def __init__(self) -> None:
        self.refs: list[str] = []

    def tool(self) -> Any:
        @tool(confirm_required=True)
        def git_push(ref: str) -> dict[str, str]:
            """Push a branch."""
            self.refs.append(ref)
            return {"ref": ref}

        return git_push


def say(beam: RiverBeam, session_id: str, text: str, agent: str = "author", **auth: Any) -> AgentResult:
    body = invoke_body(session_id, text=text, agent_name=agent)
    body["auth_context"] = {"user_id": "u1", **auth}
    result = beam.invoke(body)
    assert isinstance(result, AgentResult)
    return result


def test_a_grant_revoked_while_the_run_works_covers_none_of_its_later_calls(store: BeamStore) -> None:
    beam, pushes, session_id = RiverBeam(store), Pushes(), str(uuid.uuid4())

    @tool()
    def revoke_grants() -> dict[str, int]:
        """Revoke every grant of the session (as its owner would, from another tab)."""
        grants = beam.list_grants(session_id, user_id="u1")
        for grant in grants:
            beam.revoke_grant(session_id, grant.grant_id, user_id="u1")
        return {"revoked": len(grants)}

    model = ScriptedModel(
        [
            ModelTurn(tool_calls=[ToolCall(name="git_push", args={"ref": "docs/update"})]),
            ModelTurn(text="Pushed."),
            ModelTurn(tool_calls=[ToolCall(name="revoke_grants", args={})]),
            ModelTurn(tool_calls=[ToolCall(name="git_push", args={"ref": "main"})]),
            ModelTurn(text="Done."),
        ]
    )
    beam.register_agent("author", ToolAgentRunner(model=model, tools=[pushes.tool(), revoke_grants]))
    beam.resume(resume_body(say(beam, session_id, "Push docs/update"), grant="tool"))
    assert pushes.refs == ["docs/update"]

    later = say(beam, session_id, "Revoke, then push main")
    assert later.interrupted and later.action_required[0].args == {"ref": "main"}
    assert pushes.refs == ["docs/update"] and beam.list_grants(session_id, user_id="u1") == []


def test_a_grant_covers_its_own_agents_tool_only(store: BeamStore) -> None:
    beam, pushes, session_id = RiverBeam(store), Pushes(), str(uuid.uuid4())
    beam.register_agent("author", ToolAgentRunner(model=AuthorOfflineModel(), tools=[pushes.tool()]))
    four_eyes = {"git_push": Approvals(users=("ana",), self_approval=False)}
    deployer = ToolAgentRunner(model=AuthorOfflineModel(), tools=[pushes.tool()])
    beam.register_agent("deployer", deployer, approvals=four_eyes)
    beam.resume(resume_body(say(beam, session_id, "Push docs/update"), grant="tool"))
    [grant] = beam.list_grants(session_id, user_id="u1")
    assert (grant.agent_name, grant.tool) == ("author", "git_push")

    assert say(beam, session_id, "Push main", agent="deployer").interrupted  # ana must approve it
    assert not say(beam, session_id, "Push main").interrupted  # the author's own: granted
    assert pushes.refs == ["docs/update", "main"]


def test_a_grant_covers_nothing_once_its_tool_needs_four_eyes_or_a_quorum(store: BeamStore) -> None:
    beam, pushes, session_id = RiverBeam(store), Pushes(), str(uuid.uuid4())
    runner = ToolAgentRunner(model=AuthorOfflineModel(), tools=[pushes.tool()])
    beam.register_agent("author", runner)
    beam.resume(resume_body(say(beam, session_id, "Push docs/update"), grant="tool"))
    assert not say(beam, session_id, "Push main").interrupted

    for approvals in (Approvals(users=("ana",), self_approval=False), Approvals(users=("ana",), required=2)):
        beam.register_agent("author", runner, approvals={"git_push": approvals})  # the settings change
        assert say(beam, session_id, "Push release/1").interrupted
    beam.register_agent("author", runner)  # back as it was: the grant covers it again
    assert not say(beam, session_id, "Push release/2").interrupted
    assert pushes.refs == ["docs/update", "main", "release/2"]


def test_an_approvers_resume_decides_with_the_requesters_groups(store: BeamStore) -> None:
    beam, pushes, session_id = RiverBeam(store), Pushes(), str(uuid.uuid4())
    model = ScriptedModel(
        [
            ModelTurn(tool_calls=[ToolCall(name="git_push", args={"ref": "docs/update"})]),
            ModelTurn(tool_calls=[ToolCall(name="git_push", args={"ref": "release/x"})]),
            ModelTurn(text="Done."),
        ]
    )
    beam.register_agent(
        "author",
        ToolAgentRunner(model=model, tools=[pushes.tool()]),
        policy=Policy(RELEASES),
        approvals={"git_push": Approvals(groups=("releasers",))},
    )
    asked = say(beam, session_id, "Push docs/update, then release/x", groups=["interns"])
    resume = resume_body(asked, user="rita")
    resume["auth_context"] = {"user_id": "rita", "groups": ["releasers"]}
    beam.resume(resume)

    assert pushes.refs == ["docs/update"]
    assert asked.interaction_id is not None
    release = next(a for a in store.list_actions(asked.interaction_id) if a.args == {"ref": "release/x"})
    assert release.status == "denied" and release.response is not None
    assert release.response.by is not None and release.response.by.model_dump() == {
        "kind": "policy",
        "policy_ids": ["no-release-for-interns"],
    }


def test_an_approvers_edited_args_are_decided_with_the_requesters_groups(store: BeamStore) -> None:
    beam, pushes, session_id = RiverBeam(store), Pushes(), str(uuid.uuid4())
    beam.register_agent(
        "author",
        ToolAgentRunner(model=AuthorOfflineModel(), tools=[pushes.tool()]),
        policy=Policy(RELEASES),
        approvals={"git_push": Approvals(groups=("releasers",))},
    )
    asked = say(beam, session_id, "Push docs/update", groups=["interns"])
    resume = resume_body(asked, user="rita", edited_args={"ref": "release/x"})
    resume["auth_context"] = {"user_id": "rita", "groups": ["releasers"]}
    with pytest.raises(BeamError) as refused:
        beam.resume(resume)
    assert (refused.value.code, refused.value.status) == ("BEM-081", 400)
    assert "no-release-for-interns" in str(refused.value)
    assert asked.interaction_id is not None
    [action] = store.list_actions(asked.interaction_id)
    assert action.status == "pending" and pushes.refs == []

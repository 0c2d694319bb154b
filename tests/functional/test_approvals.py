"""Approvals people can trust (issue 13), on every store: the args' hash from the request to the response,
approve with edited args (validated, stored beside the original ones, run, told), a tool that forbids
edits, a rejection's reason that reaches the model, the audit read of an action, and a session's inbox in
one Query."""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import boto3
import pytest
from beam_store import BeamStore, DynamoBeamStore, ToolResultPart
from beam_store.dynamo import TABLE_DEFINITION
from beam_store.records import ActionResponsePart, action_cursor
from moto import mock_aws
from riverbeam import (
    AgentResult,
    BeamError,
    ModelTurn,
    NewMessage,
    RiverBeam,
    ScriptedModel,
    ToolAgentRunner,
    ToolCall,
    tool,
)
from riverbeam.agent.llm import AuthorOfflineModel
from riverbeam.models import DoneFrame

from tests.functional.test_errors import interrupted, refused
from tests.support.agents import FrameLog, PushCounter, author_beam, invoke_body, resume_body


def sha(args: dict[str, Any]) -> str:
    canonical = json.dumps(args, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


@pytest.fixture
def authored(store: BeamStore) -> tuple[RiverBeam, PushCounter]:
    return author_beam(store)


# what you see is what runs


def test_every_action_carries_the_hash_of_its_args(authored: tuple[RiverBeam, PushCounter]) -> None:
    beam, _ = authored
    result = interrupted(beam)
    asked = result.action_required[0]
    assert asked.args_sha256 == sha({"ref": "docs/update"})
    stored = beam.store.get_action(str(asked.action_id))
    assert stored is not None and stored.args_sha256 == asked.args_sha256
    assert beam.read_action(str(asked.action_id), user_id="u1").args_sha256 == asked.args_sha256
    # the done frame of a streamed invoke carries it too
    frames = FrameLog()
    beam.invoke(invoke_body(stream=True), on_frame=frames)
    done = frames[-1]
    assert isinstance(done, DoneFrame)
    assert done.result.model_dump(mode="json")["action_required"][0]["args_sha256"] == sha(
        {"ref": "docs/update"}
    )


def test_a_response_with_another_hash_is_refused_and_resolves_nothing(
    authored: tuple[RiverBeam, PushCounter],
) -> None:
    beam, counter = authored
    result = interrupted(beam)
    error = refused(
        beam, lambda: beam.resume(resume_body(result, args_sha256=sha({"ref": "main"}))), "BEM-067", 400
    )
    assert error.field == "actions.args_sha256"
    assert counter.pushed == []
    beam.resume(resume_body(result, args_sha256=result.action_required[0].args_sha256))
    assert counter.pushed == ["docs/update"]


# approve with edited args


@pytest.mark.parametrize(
    "edited, field",
    [
        ({"ref": 5}, "actions.0.edited_args.ref"),
        ({}, "actions.0.edited_args.ref"),
        ({"ref": "main", "force": True}, "actions.0.edited_args.force"),
    ],
)
def test_edited_args_that_do_not_fit_the_tool_are_refused(
    authored: tuple[RiverBeam, PushCounter], edited: dict[str, Any], field: str
) -> None:
    beam, counter = authored
    result = interrupted(beam)
    error = refused(beam, lambda: beam.resume(resume_body(result, edited_args=edited)), "BEM-001", 400)
    assert error.field == field and field in error.message
    assert counter.pushed == []


def test_edited_args_go_with_an_approval_only(authored: tuple[RiverBeam, PushCounter]) -> None:
    beam, _ = authored
    result = interrupted(beam)
    body = resume_body(result, "cancelled", edited_args={"ref": "main"})
    assert refused(beam, lambda: beam.resume(body), "BEM-001", 400).field == "actions.0"


def test_edited_args_are_stored_run_and_told(authored: tuple[RiverBeam, PushCounter]) -> None:
    beam, counter = authored
    result = interrupted(beam)
    asked = result.action_required[0]
    edited = {"ref": "docs/other"}
    beam.resume(resume_body(result, edited_args=edited, args_sha256=asked.args_sha256))
    assert counter.pushed == ["docs/other"]
    action = beam.read_action(str(asked.action_id), user_id="u1")
    assert action.status == "resolved"
    assert (action.args, action.args_sha256) == ({"ref": "docs/update"}, sha({"ref": "docs/update"}))
    assert action.response is not None
    assert (action.response.edited_args, action.response.edited_args_sha256) == (edited, sha(edited))
    assert action.response.args_sha256 == asked.args_sha256
    assert (action.run_args, action.run_args_sha256) == (edited, sha(edited))
    assert action.outcome is not None and action.outcome.output == {"ref": "docs/other"}
    # the agent is told: the action_result and the tool message both name the args it ran with
    messages = beam.store.list_messages(str(result.session_id))
    parts = [p for m in messages for p in m.content]
    answer = next(p for p in parts if isinstance(p, ActionResponsePart))
    told = next(p for p in parts if isinstance(p, ToolResultPart))
    assert answer.edited_args == edited and told.edited_args == edited and told.status == "ok"


def test_the_offline_model_says_the_args_were_edited(store: BeamStore) -> None:
    counter = PushCounter()
    beam = RiverBeam(store)
    beam.register_agent("author", ToolAgentRunner(model=AuthorOfflineModel(), tools=[counter.tool()]))
    result = interrupted(beam)
    beam.resume(resume_body(result, edited_args={"ref": "docs/other"}))
    last = beam.store.list_messages(str(result.session_id))[-1]
    text = last.content[0]
    assert last.role == "ai" and "Pushed docs/other. (You edited the args" in getattr(text, "text", "")


def _deploy_beam(store: BeamStore) -> tuple[RiverBeam, list[str]]:
    deployed: list[str] = []

    @tool(confirm_required=True, editable=False)
    def deploy(env: str) -> str:
        """Deploy to an environment."""
        deployed.append(env)
        return env

    model = ScriptedModel(
        [ModelTurn(tool_calls=[ToolCall(name="deploy", args={"env": "staging"})]), ModelTurn(text="ok")]
    )
    beam = RiverBeam(store)
    beam.register_agent("author", ToolAgentRunner(model=model, tools=[deploy]))
    return beam, deployed


def test_a_tool_may_forbid_edits(store: BeamStore) -> None:
    beam, deployed = _deploy_beam(store)
    result = interrupted(beam)
    body = resume_body(result, edited_args={"env": "production"})
    error = refused(beam, lambda: beam.resume(body), "BEM-071", 400)
    assert error.field == "actions.0.edited_args"
    beam.resume(resume_body(result))  # approved as asked, it runs
    assert deployed == ["staging"]


# reject with a reason


def test_a_rejections_reason_is_stored_read_and_reaches_the_model(store: BeamStore) -> None:
    counter = PushCounter()
    beam = RiverBeam(store)
    beam.register_agent("author", ToolAgentRunner(model=AuthorOfflineModel(), tools=[counter.tool()]))
    result = interrupted(beam)
    action_id = str(result.action_required[0].action_id)
    beam.resume(resume_body(result, "cancelled", reason="not before the release"))
    action = beam.read_action(action_id, user_id="u1")
    assert action.status == "cancelled" and action.response is not None
    assert action.response.reason == "not before the release" and action.run_args is None
    messages = beam.read_messages(str(result.session_id), user_id="u1")
    tool_part = next(p for m in messages for p in m.content if isinstance(p, ToolResultPart))
    assert tool_part.status == "refused" and tool_part.error is not None
    assert "not before the release" in tool_part.error.message
    said = messages[-1].content[0]
    assert "Your reason: not before the release" in getattr(said, "text", "")
    assert counter.pushed == []


# the audit trail and the inbox


def test_the_audit_read_shows_who_asked_who_decided_and_what_ran(
    authored: tuple[RiverBeam, PushCounter],
) -> None:
    beam, _ = authored
    result = interrupted(beam)
    action_id = str(result.action_required[0].action_id)
    beam.resume(resume_body(result, user="u1"))
    action = beam.read_action(action_id, user_id="u1")
    assert (action.agent_name, action.run_id) == ("author", result.run_id)
    assert action.response is not None and action.response.who == "u1" and action.response.when
    assert action.resolved_run_id not in (None, result.run_id)
    assert (action.run_args, action.run_args_sha256) == (action.args, action.args_sha256)
    assert action.outcome is not None and action.outcome.status == "ok"


def _asks_every_time(conversation: Sequence[NewMessage]) -> ModelTurn:
    if conversation[-1].role == "human":
        return ModelTurn(tool_calls=[ToolCall(name="git_push", args={"ref": "docs/update"})])
    return ModelTurn(text="done")


@pytest.fixture
def asking(store: BeamStore) -> RiverBeam:
    """A beam whose agent asks to push on every message: a session with several pending actions."""
    beam = RiverBeam(store)
    model = ScriptedModel([_asks_every_time] * 20)
    beam.register_agent("author", ToolAgentRunner(model=model, tools=[PushCounter().tool()]))
    return beam


def _session_with_actions(beam: RiverBeam) -> tuple[str, list[AgentResult]]:
    session_id = str(uuid.uuid4())
    results = [interrupted(beam, session_id) for _ in range(3)]
    return session_id, results


def test_the_inbox_lists_a_sessions_actions_by_status(asking: RiverBeam) -> None:
    beam = asking
    session_id, results = _session_with_actions(beam)
    beam.resume(resume_body(results[2]))
    asked = [str(r.action_required[0].action_id) for r in results]
    pending = beam.read_actions(session_id, user_id="u1", status="pending")
    assert [a.action_id for a in pending] == asked[:2]
    assert [a.action_id for a in beam.read_actions(session_id, user_id="u1", status="resolved")] == [asked[2]]
    assert {a.action_id for a in beam.read_actions(session_id, user_id="u1")} == set(asked)
    # a page, and the next one after its cursor
    first = beam.read_actions(session_id, user_id="u1", status="pending", limit=1)
    rest = beam.read_actions(session_id, user_id="u1", status="pending", after=action_cursor(first[0]))
    assert [a.action_id for a in first + rest] == asked[:2]
    interrupted(beam)  # another session's action is not in this inbox
    assert len(beam.read_actions(session_id, user_id="u1")) == 3


@pytest.mark.parametrize(
    "kwargs, code",
    [
        ({"user_id": "mallory"}, "BEM-020"),
        ({"user_id": "u1", "status": "approved"}, "BEM-001"),
        ({"user_id": "u1", "after": "nonsense"}, "BEM-001"),
        (
            {"user_id": "u1", "status": "pending", "after": f"resolved#2026-01-01T00:00:00Z#{uuid.uuid4()}"},
            "BEM-001",
        ),
    ],
)
def test_the_inbox_is_the_owners_and_its_filters_are_checked(
    asking: RiverBeam, kwargs: dict[str, Any], code: str
) -> None:
    beam = asking
    session_id, _ = _session_with_actions(beam)
    with pytest.raises(BeamError) as raised:
        beam.read_actions(session_id, **kwargs)
    assert raised.value.code == code
    with pytest.raises(BeamError) as missing:
        beam.read_actions(str(uuid.uuid4()), user_id="u1")
    assert missing.value.code == "BEM-020"


@contextmanager
def counted(store: DynamoBeamStore) -> Iterator[list[str]]:
    calls: list[str] = []

    def record(model: Any, **_: Any) -> None:
        calls.append(model.name)

    store.client.meta.events.register("before-call.dynamodb", record)
    try:
        yield calls
    finally:
        store.client.meta.events.unregister("before-call.dynamodb", record)


def test_the_inbox_is_one_query(asking: RiverBeam) -> None:
    beam = asking
    if not isinstance(beam.store, DynamoBeamStore):
        pytest.skip("requests are counted on DynamoDB")
    session_id, _ = _session_with_actions(beam)
    with counted(beam.store) as calls:
        found = beam.store.list_session_actions(session_id, status="pending", limit=100)
    assert len(found) == 3 and calls == ["Query"]


def test_a_table_made_before_the_inbox_index_gets_it() -> None:
    """A table (a local stack's data dir) created before gsi2-gsi4 gets them when the store connects."""
    indexes = TABLE_DEFINITION["GlobalSecondaryIndexes"]
    later = ("gsi2", "gsi3", "gsi4")
    before = {
        **TABLE_DEFINITION,
        "AttributeDefinitions": [
            a for a in TABLE_DEFINITION["AttributeDefinitions"] if a["AttributeName"][:4] not in later
        ],
        "GlobalSecondaryIndexes": [i for i in indexes if i["IndexName"] == "gsi1"],
    }
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        client.create_table(TableName="older", **before)
        store = DynamoBeamStore.connect("older", client=client)
        table = client.describe_table(TableName="older")["Table"]
        assert {i["IndexName"] for i in table["GlobalSecondaryIndexes"]} == {"gsi1", "gsi2", "gsi3", "gsi4"}
        assert store.list_session_actions(str(uuid.uuid4()), status="pending") == []

"""Least privilege both ways, from the calls the functions really make: the handlers of every function are
driven through one deployment (invoke, resume with a standing grant, the worker, every read route, a
grant's revocation, $connect and $disconnect, the sweep expiring an action and forgetting a gone
connection, the events function publishing, content over 256 KiB in the bucket), each in a fresh
container where Lambda would have one, while every botocore call is recorded as IAM authorizes it
(tests/support/aws_calls.py). Then, against each function's role in the transformed template: every call
is allowed, and every grant (statement, action, resource) allows some call, of the function or of its
event source mapping, but for the few listed here with the reason this run cannot make them."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from riverbeam import Approvals, ModelTurn, RiverBeam, ScriptedModel, ToolAgentRunner, ToolCall, tool
from riverbeam.aws import runtime

from tests.support.agents import invoke_body, resume_body
from tests.support.aws_calls import Call
from tests.support.iam import allowed, event_source_calls, grant_triples, role_of, used_triples
from tests.support.lambda_stack import (
    FUNCTIONS,
    Stack,
    _gone_hook,
    deployment_of,
    event,
    http_event,
    lambda_stack,
    ws_event,
)
from tests.support.large_content import big_runner
from tests.support.stores import REGION

BUCKET = "riverbeam-content"
AGENTS = "tests.functional.test_deployed_permissions:register"
# an approval that expires a second after it is asked, for the sweep (which reads the wall clock)
EXPIRES_AFTER = 1.0

# Grants this run cannot exercise, each with where its calls are made (and tested): a new grant nobody
# uses fails the test until it is used or listed here with its reason.
UNEXERCISED = {
    ("invoke", "TableReadWrite", "dynamodb:DeleteItem"): (
        "a request_id's claim released when the hand-off to the queue fails "
        "(test_function_policies.py::test_an_invoke_whose_hand_off_fails_frees_its_request_id_as_its_policy_allows)"
    ),
    ("invoke", "ContentReadWrite", "s3:PutObject"): "a non-streamed run's content over 256 KiB",
    ("resume", "ContentReadWrite", "s3:GetObject"): "a resumed action's stored args or outcome over 256 KiB",
    ("resume", "ContentReadWrite", "s3:PutObject"): "a resume's edited args or reason over 256 KiB",
    ("resume", "ContentList", "s3:ListBucket"): "beside s3:GetObject, for a missing object's 404",
    ("sweep", "ContentRead", "s3:GetObject"): "an expired action's outcome or frames over 256 KiB",
    ("sweep", "ContentList", "s3:ListBucket"): "beside s3:GetObject, for a missing object's 404",
    # configured by parameters, and checked for them in tests/unit/test_deployed_access.py
    ("invoke", "ReadGitCredentials", "secretsmanager:GetSecretValue"): "GitCredentialsSecret",
    ("worker", "ReadGitCredentials", "secretsmanager:GetSecretValue"): "GitCredentialsSecret",
    ("invoke", "ReadMcpHeaders", "secretsmanager:GetSecretValue"): "McpHeaderSecretArns",
    ("resume", "ReadMcpHeaders", "secretsmanager:GetSecretValue"): "McpHeaderSecretArns",
    ("worker", "ReadMcpHeaders", "secretsmanager:GetSecretValue"): "McpHeaderSecretArns",
    ("invoke", "DecryptSecrets", "kms:Decrypt"): "SecretsKmsKeyArn (Secrets Manager decrypts, not the code)",
    ("resume", "DecryptSecrets", "kms:Decrypt"): "SecretsKmsKeyArn (Secrets Manager decrypts, not the code)",
    ("worker", "DecryptSecrets", "kms:Decrypt"): "SecretsKmsKeyArn (Secrets Manager decrypts, not the code)",
    # Bedrock: the agents run here on scripted models (tests/unit/test_deployed_access.py: the model calls)
    ("invoke", "InvokeConfiguredModels", "bedrock:InvokeModelWithResponseStream"): "BedrockModelIds",
    ("invoke", "InvokeModelsBehindConfiguredProfiles", "bedrock:InvokeModelWithResponseStream"): "a profile",
    ("worker", "InvokeConfiguredModels", "bedrock:InvokeModelWithResponseStream"): "BedrockModelIds",
    ("worker", "InvokeModelsBehindConfiguredProfiles", "bedrock:InvokeModelWithResponseStream"): "a profile",
}


@tool(confirm_required=True, expires_after=EXPIRES_AFTER)
def pause(reason: str) -> str:
    """Pause, if someone says so within a second."""
    return reason


def register(beam: RiverBeam) -> None:
    """The agents of this deployment: `big` (content over 256 KiB, tests/support/large_content.py) and
    `brief`, whose approval expires at once, and `follow`, which answers in a session begun by another."""
    # u2 may answer its approvals too: an action then has entries in the approvers' inboxes (gsi4)
    beam.register_agent("big", big_runner(), approvals={"dump": Approvals(users=("u2",))})
    asks = ModelTurn(tool_calls=[ToolCall(name="pause", args={"reason": "r"})])
    model = ScriptedModel([asks, ModelTurn(text="It expired: nobody answered.")])
    beam.register_agent("brief", ToolAgentRunner(model=model, tools=[pause]))
    # an answer to whatever came before it in the session (its turn is picked by the conversation's length)
    beam.register_agent(
        "follow", ToolAgentRunner(model=ScriptedModel([ModelTurn(text="noted")] * 8), tools=[])
    )


def _fresh_container(stack: Stack) -> None:
    """What the next handler runs in: a container of its own (no client, no content cache kept)."""
    runtime.reset()
    runtime.management_api().meta.events.register(
        "before-call.apigatewaymanagementapi.PostToConnection", _gone_hook(stack)
    )


def _http(stack: Stack, sample: str, path: str | None = None, body: Any = None, **query: str) -> Any:
    answer = stack.call(sample.split("/")[0], http_event(sample, path=path, body=body, query=query or None))
    return answer["statusCode"], json.loads(answer["body"]) if answer.get("body") else None


def _revoke(stack: Stack, session_id: str, grant_id: str) -> int:
    e = http_event(
        "records/session", path=f"/sessions/{session_id}/grants/{grant_id}", query={"user_id": "u1"}
    )
    e["routeKey"] = "DELETE /sessions/{id}/grants/{grant_id}"
    e["requestContext"]["http"]["method"] = "DELETE"
    e["pathParameters"] = {"id": session_id, "grant_id": grant_id}
    return int(stack.call("records", e)["statusCode"])


def _reads(stack: Stack, session_id: str, asked: dict[str, Any], run_id: str) -> None:
    """Every read route of the records function, each in a fresh container (its content read back)."""
    action_id = asked["action_required"][0]["action_id"]
    reads = [
        ("records/session", f"/sessions/{session_id}"),
        ("records/messages", f"/sessions/{session_id}/messages"),
        ("records/actions", f"/sessions/{session_id}/actions"),
        ("records/interaction", f"/interactions/{asked['interaction_id']}"),
        ("records/run", f"/runs/{run_id}"),
        ("records/frames", f"/runs/{run_id}/frames"),
        ("records/action", f"/actions/{action_id}"),
        ("records/approvals", "/approvals"),
        ("records/session", f"/sessions/{session_id}/grants"),
        ("records/openapi", "/openapi.json"),
    ]
    for sample, path in reads:
        _fresh_container(stack)
        e = http_event(sample, path=path, query={"user_id": "u1"})
        if path.endswith("/grants"):
            e["routeKey"] = "GET /sessions/{id}/grants"
            e["pathParameters"] = {"id": session_id}
        answer = stack.call("records", e)
        assert answer["statusCode"] == 200, (path, answer)


def _drive(stack: Stack) -> None:
    """Each function through its handler, as a deployment's clients and AWS drive them."""
    boto3.client("s3", region_name=REGION).create_bucket(Bucket=BUCKET)
    # a non-streamed invoke that asks, a subscriber, and the resume granting the tool for the session
    status, asked = _http(stack, "invoke/http", body=invoke_body(text="dump the log") | {"agent_name": "big"})
    assert status == 200 and asked["interrupted"], asked
    session_id = asked["session_id"]
    connection_id, answer = stack.connect(session_id, "u1")
    assert answer["statusCode"] == 200, answer
    resume = resume_body(asked) | {"agent_name": "big"}
    resume["actions"][0]["grant"] = "tool"
    _fresh_container(stack)
    status, ack = _http(stack, "resume/http", body=resume)
    assert status == 202, ack
    _fresh_container(stack)
    assert stack.drain() == []
    # the session goes on, in process and streamed: its earlier content read back by the invoke and the
    # worker, which forgets a connection that is gone
    stack.gone.add(stack.connect(session_id, "u1", "gone-subscriber=")[0])
    for sample, stream in (("invoke/http", False), ("invoke/http_stream", True)):
        _fresh_container(stack)
        again = invoke_body(session_id, text="and now?", stream=stream) | {"agent_name": "follow"}
        status, answer = _http(stack, sample, body=again)
        assert status == (202 if stream else 200), answer
    _fresh_container(stack)
    assert stack.drain() == []
    _reads(stack, session_id, asked, ack["run_id"])
    _fresh_container(stack)
    status, grants = _http(stack, "records/session", path=f"/sessions/{session_id}/grants", user_id="u1")
    (grant,) = grants["grants"]
    assert _revoke(stack, session_id, grant["grant_id"]) == 204
    # two approvals nobody answers: one expired by the next invoke of its interaction, the other by the
    # sweep, which forgets the session's gone connection
    waiting = []
    for _ in range(2):
        status, asked_again = _http(
            stack, "invoke/http", body=invoke_body(text="pause") | {"agent_name": "brief"}
        )
        assert status == 200 and asked_again["interrupted"], asked_again
        waiting.append(asked_again)
    stack.gone.add(stack.connect(waiting[1]["session_id"], "u1", "gone-connection=")[0])
    time.sleep(EXPIRES_AFTER + 0.5)  # past their expiry by the wall clock the functions read
    _fresh_container(stack)
    late = invoke_body(waiting[0]["session_id"], text="and now?", interaction_id=waiting[0]["interaction_id"])
    status, answer = _http(stack, "invoke/http", body=late | {"agent_name": "brief"})
    assert status == 200 and not answer["interrupted"], answer
    _fresh_container(stack)
    stack.call("sweep", event("sweep/schedule"))
    assert stack.pushed("gone-connection=") == []
    # the subscriber leaves; the approval events are published
    stack.call("connections", ws_event("connections/disconnect", connection_id=connection_id))
    assert stack.publish() == []


@pytest.fixture(scope="module")
def driven(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[set[Call], Any]]:
    with lambda_stack(
        tmp_path_factory.mktemp("deployed"), CONTENT_BUCKET=BUCKET, RIVERBEAM_AGENTS=AGENTS
    ) as stack:
        _drive(stack)
        yield set(stack.calls), deployment_of(stack, "none")


def test_every_function_makes_calls_and_each_call_is_allowed_by_its_role(
    driven: tuple[set[Call], Any],
) -> None:
    calls, deployed = driven
    assert {c.function for c in calls} == set(FUNCTIONS)
    refused = [c for c in sorted(calls) if not allowed(deployed.statements(role_of(c.function)), c)]
    assert not refused, refused
    # what made these calls: every large-content read and write, the push, the queue, the bus
    actions = {(c.function, c.action) for c in calls}
    assert {("records", "s3:GetObject"), ("worker", "s3:PutObject"), ("invoke", "s3:GetObject")} <= actions
    assert {("sweep", "execute-api:ManageConnections"), ("sweep", "dynamodb:DeleteItem")} <= actions
    assert {("records", "dynamodb:UpdateItem"), ("events", "events:PutEvents")} <= actions


def test_every_grant_of_every_role_is_used_by_a_call(driven: tuple[set[Call], Any]) -> None:
    calls, deployed = driven
    by_mapping = event_source_calls(deployed)
    unused, figures = {}, []
    for function in FUNCTIONS:
        statements = deployed.statements(role_of(function))
        mine = {c for c in calls | by_mapping if c.function == function}
        granted = grant_triples(statements)
        used = used_triples(statements, mine)
        unused[function] = sorted(granted - used)
        figures.append(f"{function}: {len(mine)} calls, {len(granted)} grants, {len(granted - used)} unused")
    print("\n".join(figures))
    left = {
        f"{function} {sid} {action} {resource}"
        for function, triples in unused.items()
        for sid, action, resource in triples
        if (function, sid, action) not in UNEXERCISED
    }
    assert not left, "granted and never used:\n" + "\n".join(sorted(left))
    # each exception is still a grant of its function (else it goes from the list)
    listed = {(f, sid, action) for f, triples in unused.items() for sid, action, _ in triples}
    assert set(UNEXERCISED) <= listed, sorted(set(UNEXERCISED) - listed)

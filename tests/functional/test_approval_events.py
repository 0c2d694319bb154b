"""Approval events: an `Approval Requested` when a run asks, an `Approval Decided` when a resume resolves
(who, edited or not, the hashes, the reason), an `Approval Expired` when an action expires (a resume, the
next run or the sweep), each with a stable id, kept in the outbox by the write that made it so and never
by a write that lost; a sink that fails never fails the step. On every store with an in-process sink, then
through the Lambda handlers onto moto's EventBridge (a rule to an SQS queue reads them back): the API
functions write the outbox, the events function puts it on the bus from the table's stream, also after
the function that wrote it was killed right after its write, with the same id on every delivery."""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import Iterator, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest
from beam_store import Action, ActionResponseRecord, BeamStore, OutboxEvent
from beam_store.dynamo.outbox_items import outbox_items
from riverbeam import (
    AgentResult,
    ApprovalEvent,
    BeamError,
    EventLog,
    ModelTurn,
    RiverBeam,
    ScriptedModel,
    ToolAgentRunner,
    ToolCall,
)
from riverbeam.aws import bus, runtime
from riverbeam.pipeline import approval_events
from riverbeam_local.lambda_like import scheduled_event

from tests.support.agents import PushCounter, invoke_body, resume_body
from tests.support.clock import Clock, asked, clocked, iso
from tests.support.lambda_stack import ROOT, Stack, http_event, lambda_stack
from tests.support.stores import REGION, outbox


@pytest.fixture
def clock() -> Clock:
    return Clock()


def logged(store: BeamStore, clock: Clock) -> tuple[Any, EventLog]:
    beam, _ = clocked(store, clock)
    log = EventLog()
    beam.set_event_sink(log)
    return beam, log


def test_a_request_and_its_decision_with_who_and_the_hashes(store: BeamStore, clock: Clock) -> None:
    beam, log = logged(store, clock)
    result = asked(beam)
    (requested,) = log
    action = result.action_required[0]
    assert requested.source == "riverbeam" and requested.detail_type == "Approval Requested"
    assert requested.id == f"evt_{action.action_id}_requested"
    assert requested.detail | {"created_at": "", "updated_at": ""} == {
        "id": requested.id,
        "version": 1,
        "action_id": action.action_id,
        "kind": "confirmation",
        "tool": "git_push",
        "status": "pending",
        "session_id": result.session_id,
        "interaction_id": result.interaction_id,
        "run_id": result.run_id,
        "agent_name": "author",
        "user_id": "u1",
        "args_sha256": action.args_sha256,
        "args": {"ref": "docs/update"},
        "expires_at": action.expires_at,
        "created_at": "",
        "updated_at": "",
    }
    beam.resume(resume_body(result, edited_args={"ref": "docs/other"}, args_sha256=action.args_sha256))
    decided = log[1]
    assert decided.detail_type == "Approval Decided" and len(log) == 2
    assert {k: decided.detail[k] for k in ("status", "decision", "decided_by", "edited", "reason")} == {
        "status": "resolved",
        "decision": "submitted",
        "decided_by": "u1",
        "edited": True,
        "reason": None,
    }
    assert decided.detail["edited_args"] == {"ref": "docs/other"}
    assert decided.detail["run_args_sha256"] == decided.detail["edited_args_sha256"] != action.args_sha256
    assert decided.detail["approved_args_sha256"] == action.args_sha256
    assert decided.detail["decided_at"] == decided.detail["updated_at"] == iso(clock())
    assert decided.id == f"evt_{action.action_id}_decided"
    # what the sink was handed is what the writes kept in the outbox, ids and all
    assert sorted(outbox(store)) == sorted(outbox_events(log))


def test_a_rejection_with_its_reason_and_no_event_for_a_refused_resume(
    store: BeamStore, clock: Clock
) -> None:
    beam, log = logged(store, clock)
    result = asked(beam)
    beam.resume(resume_body(result, "cancelled", reason="not today"))
    assert [e.detail_type for e in log] == ["Approval Requested", "Approval Decided"]
    assert log[1].detail["decision"] == "cancelled" and log[1].detail["reason"] == "not today"
    with pytest.raises(BeamError):  # lost: the action is no longer pending
        beam.resume(resume_body(result))
    assert len(log) == 2 and len(outbox(store)) == 2


@pytest.mark.parametrize("expired_by", ["resume", "run", "sweep"])
def test_an_expiry_is_told_once_by_whoever_expires_it(
    store: BeamStore, clock: Clock, expired_by: str
) -> None:
    beam, log = logged(store, clock)
    result = asked(beam)
    clock.advance(hours=25)
    if expired_by == "resume":
        with pytest.raises(BeamError):
            beam.resume(resume_body(result))
    elif expired_by == "run":
        beam.invoke(
            invoke_body(str(result.session_id), "u1", "hi", interaction_id=str(result.interaction_id))
        )
    else:
        beam.sweep_expired()
    beam.sweep_expired()  # finds nothing more to tell
    expired = [e for e in log if e.detail_type == "Approval Expired"]
    assert len(expired) == 1 and expired[0].detail["expired_by"] == expired_by
    assert expired[0].detail["status"] == "expired" and expired[0].detail["expired_at"] == iso(clock())
    assert expired[0].id == f"evt_{result.action_required[0].action_id}_expired"
    kept = [e for e in outbox(store) if e.detail_type == "Approval Expired"]
    assert kept == outbox_events(expired)


def test_large_args_are_left_out_and_a_failing_sink_fails_nothing(store: BeamStore, clock: Clock) -> None:
    log = EventLog()
    beam = RiverBeam(store, clock=clock, events=log)
    model = ScriptedModel([ModelTurn(tool_calls=[ToolCall(name="git_push", args={"ref": "x" * 9000})])])
    beam.register_agent("author", ToolAgentRunner(model=model, tools=[PushCounter().tool()]))
    result = asked(beam)
    assert "args" not in log[0].detail and log[0].detail["args_omitted"] is True
    assert len(json.dumps(log[0].detail)) < 2048

    def broken(events: Sequence[ApprovalEvent]) -> None:
        raise RuntimeError("the bus is down")

    beam.set_event_sink(broken)
    beam.resume(resume_body(result, "cancelled"))
    assert beam.read_action(str(result.action_required[0].action_id), user_id="u1").status == "cancelled"
    # the sink lost it; the outbox did not (a deployment publishes from there)
    assert sorted(e.detail_type for e in outbox(store)) == ["Approval Decided", "Approval Requested"]


def outbox_events(events: Sequence[ApprovalEvent]) -> list[OutboxEvent]:
    return [OutboxEvent(e.id, e.source, e.detail_type, e.detail) for e in events]


# through the handlers, onto moto's EventBridge


def _bus_to_queue(bus: str) -> tuple[Any, str]:
    """The bus, and a rule sending every riverbeam event on it to a queue."""
    events, sqs = boto3.client("events", region_name=REGION), boto3.client("sqs", region_name=REGION)
    events.create_event_bus(Name=bus)
    url = sqs.create_queue(QueueName=f"{bus}-read")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    events.put_rule(Name="all", EventBusName=bus, EventPattern=json.dumps({"source": ["riverbeam"]}))
    events.put_targets(Rule="all", EventBusName=bus, Targets=[{"Id": "queue", "Arn": arn}])
    return sqs, url


def _read(sqs: Any, url: str, max_batches: int = 100) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for _ in range(max_batches):
        got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=0).get("Messages", [])
        if not got:
            return found
        for m in got:
            found.append(json.loads(m["Body"]))
            sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
    raise AssertionError(f"the queue was not empty after {max_batches} batches")


@pytest.fixture
def bus_stack(tmp_path: Path) -> Iterator[tuple[Stack, Any, str]]:
    """The handlers on moto with their bus, and a queue that gets everything put on it."""
    bus = f"approvals-{uuid.uuid4().hex[:8]}"
    with lambda_stack(tmp_path, EVENT_BUS_NAME=bus) as stack:
        sqs, url = _bus_to_queue(bus)
        yield stack, sqs, url


def test_the_handlers_write_the_events_and_the_events_function_puts_them(
    bus_stack: tuple[Stack, Any, str],
) -> None:
    stack, sqs, url = bus_stack
    first = _invoke(stack)
    second = _invoke(stack)
    answered = stack.call("resume", http_event("resume/http", body=resume_body(first)))
    assert answered["statusCode"] == 202 and stack.drain() == []
    connection, _ = stack.connect(str(second.session_id), "u1")
    later = Clock(runtime.beam()._setup.clock() + timedelta(days=2))
    runtime.beam()._setup.clock = later
    swept = stack.call("sweep", scheduled_event("riverbeam-sweep"))
    assert swept == {"expired": [second.action_required[0].action_id]}
    assert _read(sqs, url) == []  # the API functions and the sweep put nothing themselves
    assert stack.publish() == []
    got = _read(sqs, url)
    pushed = Stack.pushed(connection)
    kinds = sorted((e["detail-type"], e["detail"]["action_id"]) for e in got)
    first_id, second_id = first.action_required[0].action_id, second.action_required[0].action_id
    assert kinds == sorted(
        [
            ("Approval Requested", first_id),
            ("Approval Requested", second_id),
            ("Approval Decided", first_id),
            ("Approval Expired", second_id),
        ]
    )
    assert all(e["source"] == "riverbeam" for e in got)
    kind = {"Approval Requested": "requested", "Approval Decided": "decided", "Approval Expired": "expired"}
    assert all(e["detail"]["id"] == f"evt_{e['detail']['action_id']}_{kind[e['detail-type']]}" for e in got)
    expired = next(e["detail"] for e in got if e["detail-type"] == "Approval Expired")
    assert expired["expired_by"] == "sweep" and expired["expired_at"] == iso(later())
    (frame,) = [f for f in pushed if f["type"] == "action_expired"]
    assert frame["action_id"] == second_id and frame["run_id"] == second.run_id
    assert stack.publish() == [] and _read(sqs, url) == []  # each write's events once


class Killed(BaseException):
    """The function's process ending right there (no handler of the pipeline catches it)."""


def _killed_after_commit(stack: Stack, operation: str) -> None:
    """The function dies right after its next `operation` call to DynamoDB has been answered: the write
    committed, nothing after it runs."""

    def kill(http_response: Any, parsed: dict[str, Any], **_: Any) -> None:
        if parsed.get("ResponseMetadata", {}).get("HTTPStatusCode") == 200:
            client.meta.events.unregister(f"after-call.dynamodb.{operation}", kill)
            raise Killed

    client = runtime.beam().store.client  # type: ignore[attr-defined]
    client.meta.events.register(f"after-call.dynamodb.{operation}", kill)


@pytest.mark.parametrize("killed", ["resume", "sweep"])
def test_an_event_whose_function_died_after_its_write_is_delivered_with_its_id_on_every_delivery(
    bus_stack: tuple[Stack, Any, str], killed: str
) -> None:
    stack, sqs, url = bus_stack
    asked_for = _invoke(stack)
    action_id = asked_for.action_required[0].action_id
    assert stack.publish() == []
    assert [e["detail"]["id"] for e in _read(sqs, url)] == [f"evt_{action_id}_requested"]
    if killed == "resume":
        _killed_after_commit(stack, "TransactWriteItems")
        with pytest.raises(Killed):
            stack.call("resume", http_event("resume/http", body=resume_body(asked_for, "cancelled")))
        want = ("Approval Decided", f"evt_{action_id}_decided", "cancelled")
    else:
        runtime.beam()._setup.clock = Clock(runtime.beam()._setup.clock() + timedelta(days=2))
        _killed_after_commit(stack, "TransactWriteItems")  # the expiry's write, with its event
        with pytest.raises(Killed):
            stack.call("sweep", scheduled_event("riverbeam-sweep"))
        want = ("Approval Expired", f"evt_{action_id}_expired", "expired")
    read = http_event("records/action", path=f"/actions/{action_id}", query={"user_id": "u1"})
    stored = json.loads(stack.call("records", read)["body"])
    assert stored["status"] == want[2]  # the write committed before the function died
    assert _read(sqs, url) == []  # nothing was put before the function died
    records = stack.stream_records()
    assert len(records) == 1
    deliveries = []
    for _ in range(2):  # the stream's consumer, then a redelivery of the same record
        assert stack.publish(records) == []
        (got,) = _read(sqs, url)
        deliveries.append(got)
        assert (got["detail-type"], got["detail"]["id"], got["detail"]["status"]) == want
    assert deliveries[0]["detail"] == deliveries[1]["detail"]


def _outbox_record(stack: Stack, image: dict[str, Any], n: int) -> dict[str, Any]:
    """A stream record of an outbox item inserted, as the event source mapping hands it on."""
    (sample,) = json.loads((ROOT / "events" / "events" / "outbox_insert.json").read_text())["Records"]
    record = copy.deepcopy(sample)
    record["dynamodb"]["NewImage"] = image
    record["dynamodb"]["Keys"] = {"pk": image["pk"], "sk": image["sk"]}
    record["dynamodb"]["SequenceNumber"] = f"{n:024d}"
    return record  # type: ignore[no-any-return]


def _event_item(n: int) -> dict[str, Any]:
    action = _decided(n).model_copy(update={"args": {"ref": f"docs/{n}"}, "response": None})
    (item,) = outbox_items(
        approval_events.outbox(approval_events.approval_events(approval_events.REQUESTED, [action]))
    )
    return item


def test_a_batch_with_one_unreadable_record_reports_that_record_alone(
    bus_stack: tuple[Stack, Any, str],
) -> None:
    stack, sqs, url = bus_stack
    bad = _event_item(2) | {"events": {"S": "[{not json"}}
    records = [_outbox_record(stack, _event_item(1), 1), _outbox_record(stack, bad, 2)]
    records.append(_outbox_record(stack, _event_item(3), 3))
    assert stack.publish(records) == [f"{2:024d}"]
    put = sorted(e["detail"]["args"]["ref"] for e in _read(sqs, url))
    assert put == ["docs/1", "docs/3"]


def test_an_entry_eventbridge_refuses_fails_its_record_and_only_that_one(
    bus_stack: tuple[Stack, Any, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """PutEvents answers 200 with FailedEntryCount 1: the record that carried the entry is a batch item
    failure; the other record of the batch is done."""
    stack, _, _ = bus_stack
    calls: list[list[dict[str, Any]]] = []

    class Refusing:
        def put_events(self, Entries: list[dict[str, Any]]) -> dict[str, Any]:
            calls.append(Entries)
            refused = ["docs/2" in e["Detail"] for e in Entries]
            return {
                "FailedEntryCount": sum(refused),
                "Entries": [
                    {"ErrorCode": "InternalFailure", "ErrorMessage": "try again"} if r else {"EventId": "e"}
                    for r in refused
                ],
            }

    monkeypatch.setattr(runtime, "events_client", lambda: Refusing())
    records = [_outbox_record(stack, _event_item(n), n) for n in (1, 2)]
    assert stack.publish(records) == [f"{2:024d}"]
    assert len(calls) == 2 and all(e["EventBusName"].startswith("approvals-") for c in calls for e in c)


def _invoke(stack: Stack) -> AgentResult:
    answer = stack.call("invoke", http_event("invoke/http", body=invoke_body()))
    assert answer["statusCode"] == 200, answer
    return AgentResult.model_validate(json.loads(answer["body"]))


PUT_EVENTS_BYTES = 256 * 1024  # a PutEvents request's entries in all (AWS: PutEvents event entry size)


def _entry_size(entry: dict[str, Any]) -> int:
    return sum(len(entry[k].encode()) for k in ("Source", "DetailType", "Detail"))


def _decided(n: int) -> Action:
    """A decision as large as an event keeps: args and edited args just under ARGS_LIMIT, a reason of
    REASON_LIMIT control characters (each \\u0001, six bytes, in the Detail)."""
    big = {"text": "x" * (approval_events.ARGS_LIMIT - 20)}
    assert len(json.dumps(big, separators=(",", ":")).encode()) <= approval_events.ARGS_LIMIT
    return Action(
        action_id=f"00000000-0000-4000-8000-{n:012d}",
        session_id="s",
        interaction_id="i",
        run_id="r",
        user_id="u1",
        agent_name="author",
        tool="write_file",
        args=big,
        status="resolved",
        response=ActionResponseRecord(
            status="submitted",
            request_id="q",
            who="u1",
            when="2026-12-03T09:00:00.000000Z",
            reason="\x01" * approval_events.REASON_LIMIT,
            edited_args=big,
            edited_args_sha256="e",
        ),
        created_at="2026-12-03T09:00:00.000000Z",
        updated_at="2026-12-03T09:00:00.000000Z",
    )


def test_each_put_events_call_stays_under_256_kb() -> None:
    calls: list[list[dict[str, Any]]] = []

    class Client:
        def put_events(self, Entries: list[dict[str, Any]]) -> dict[str, Any]:
            calls.append(Entries)
            return {"FailedEntryCount": 0, "Entries": [{"EventId": "x"} for _ in Entries]}

    decided = [_decided(n) for n in range(10)]  # a resume may answer up to 25 actions
    put = bus.put(
        Client(),
        "bus",
        approval_events.outbox(approval_events.approval_events(approval_events.DECIDED, decided)),
    )  # type: ignore[arg-type]
    assert all(len(call) <= 10 for call in calls)
    sizes = [sum(_entry_size(e) for e in call) for call in calls]
    assert max(sizes) < PUT_EVENTS_BYTES, f"a PutEvents request of {max(sizes)} bytes"
    # every event put, once, in order
    sent = [json.loads(e["Detail"])["action_id"] for call in calls for e in call]
    assert sent == [a.action_id for a in decided] and put == 10

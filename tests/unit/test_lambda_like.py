"""What behaves like Lambda, for the local stack and the tests: the records an event source mapping builds
are those of the sample events in events/ (AWS's shapes), a scheduled event is EventBridge's, a handler is
loaded by its file, and the context counts down from the function's timeout."""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

from riverbeam_local import lambda_like

ROOT = Path(__file__).resolve().parents[2]


def _sample(name: str) -> dict[str, Any]:
    return json.loads((ROOT / "events" / f"{name}.json").read_text())  # type: ignore[no-any-return]


def test_an_sqs_record_is_the_sample_workers_record_made_from_what_receive_message_returned() -> None:
    (want,) = _sample("worker/job")["Records"]
    received = {  # ReceiveMessage's answer (AttributeNames=All) for the sample's message
        "MessageId": want["messageId"],
        "ReceiptHandle": want["receiptHandle"],
        "MD5OfBody": want["md5OfBody"],
        "Body": want["body"],
        "Attributes": want["attributes"],
    }
    assert lambda_like.sqs_record(received, want["eventSourceARN"]) == want


def test_an_sqs_records_message_attributes_are_named_as_lambda_names_them() -> None:
    received = {
        "MessageId": "m1",
        "ReceiptHandle": "r1",
        "MD5OfBody": "0",
        "Body": "{}",
        "MessageAttributes": {"traceparent": {"StringValue": "00-ab-cd-01", "DataType": "String"}},
    }
    record = lambda_like.sqs_record(received, "arn:aws:sqs:eu-west-1:123456789012:jobs.fifo")
    assert record["messageAttributes"] == {
        "traceparent": {
            "stringValue": "00-ab-cd-01",
            "binaryValue": None,
            "stringListValues": [],
            "binaryListValues": [],
            "dataType": "String",
        }
    }
    assert record["awsRegion"] == "eu-west-1" and record["attributes"] == {}


def test_a_stream_record_is_the_sample_events_record_made_from_what_get_records_returned() -> None:
    (want,) = _sample("events/outbox_insert")["Records"]
    created = datetime.datetime.fromtimestamp(want["dynamodb"]["ApproximateCreationDateTime"], datetime.UTC)
    read = {  # GetRecords' answer: boto3 gives the creation time as a datetime, and no stream ARN
        "eventID": want["eventID"],
        "eventName": want["eventName"],
        "eventVersion": want["eventVersion"],
        "eventSource": want["eventSource"],
        "awsRegion": want["awsRegion"],
        "dynamodb": {**want["dynamodb"], "ApproximateCreationDateTime": created},
    }
    record = lambda_like.stream_record(read, want["eventSourceARN"])
    assert record == want
    assert record["dynamodb"]["ApproximateCreationDateTime"] == float(created.timestamp())


def test_the_filter_takes_the_outbox_inserts_alone() -> None:
    (record,) = _sample("events/outbox_insert")["Records"]
    pattern = {"eventName": ["INSERT"], "dynamodb": {"NewImage": {"entity": {"S": ["outbox"]}}}}
    assert lambda_like.matches(pattern, record)
    assert not lambda_like.matches(pattern, {**record, "eventName": "MODIFY"})
    other = {**record, "dynamodb": {"NewImage": {"entity": {"S": "action"}}}}
    assert not lambda_like.matches(pattern, other)
    assert not lambda_like.matches(pattern, {"eventName": "INSERT"})  # no image at all
    assert not lambda_like.matches(pattern, "not a record")


def test_a_scheduled_event_is_eventbridges_for_the_rule_named() -> None:
    want = _sample("sweep/schedule")
    first, second = lambda_like.scheduled_event("sweep-rule"), lambda_like.scheduled_event("sweep-rule")
    assert sorted(first) == sorted(want)
    assert {k: first[k] for k in ("version", "detail-type", "source", "detail")} == {
        k: want[k] for k in ("version", "detail-type", "source", "detail")
    }
    assert first["resources"] == ["arn:aws:events:us-east-1:123456789012:rule/sweep-rule"]
    assert datetime.datetime.strptime(first["time"], "%Y-%m-%dT%H:%M:%SZ")
    assert first["id"] != second["id"]


def test_handlers_of_files_with_one_name_load_as_modules_of_their_own(tmp_path: Path) -> None:
    files = []
    for name in ("one", "two"):
        (tmp_path / name).mkdir()
        app = tmp_path / name / "app.py"
        app.write_text(f"def lambda_handler(event, context):\n    return ('{name}', event)\n")
        files.append(app)
    one = lambda_like.load_handler(files[0], "app_one")
    two = lambda_like.load_handler(files[1], "app_two")
    assert (one({"a": 1}, None), two({"b": 2}, None)) == (("one", {"a": 1}), ("two", {"b": 2}))
    (tmp_path / "three.py").write_text("def handle(event, context):\n    return 3\n")
    assert lambda_like.load_handler(tmp_path / "three.py", "three", "handle")({}, None) == 3


def test_the_context_names_the_function_and_counts_down_from_its_timeout() -> None:
    context = lambda_like.LambdaContext("riverbeam-local-WorkerFunction", 900)
    assert context.function_name == "riverbeam-local-WorkerFunction"
    assert context.invoked_function_arn == (
        "arn:aws:lambda:us-east-1:123456789012:function:riverbeam-local-WorkerFunction"
    )
    assert context.log_group_name == "/aws/lambda/riverbeam-local-WorkerFunction"
    assert 0 < context.get_remaining_time_in_millis() <= 900_000
    other = lambda_like.LambdaContext("riverbeam-local-WorkerFunction", 900)
    assert context.aws_request_id != other.aws_request_id  # one per invocation
    assert lambda_like.LambdaContext("f", 0).get_remaining_time_in_millis() == 0  # never below 0

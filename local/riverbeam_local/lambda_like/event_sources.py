"""What Lambda's event sources hand a function: an SQS batch's records as the event source mapping builds
them from ReceiveMessage, a DynamoDB stream's records as it builds them from GetRecords (and its filter
criteria), and the scheduled event EventBridge sends on a schedule."""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Mapping
from typing import Any

from .invocation import ACCOUNT_ID, REGION


def sqs_record(message: Mapping[str, Any], queue_arn: str) -> dict[str, Any]:
    """A message as SQS ReceiveMessage (AttributeNames=All) returns it, as the event source mapping hands
    it to the function: one record of the Lambda SQS event."""
    return {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": message.get("Attributes", {}),
        "messageAttributes": {
            name: {
                "stringValue": value.get("StringValue"),
                "binaryValue": value.get("BinaryValue"),
                "stringListValues": [],
                "binaryListValues": [],
                "dataType": value["DataType"],
            }
            for name, value in message.get("MessageAttributes", {}).items()
        },
        "md5OfBody": message["MD5OfBody"],
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": queue_arn.split(":")[3],
    }


def stream_record(record: Mapping[str, Any], stream_arn: str) -> dict[str, Any]:
    """A record as DynamoDB Streams' GetRecords returns it, as the event source mapping hands it to the
    function: one record of the Lambda DynamoDB stream event (its creation time in epoch seconds, the
    stream's ARN beside it)."""
    stream = dict(record["dynamodb"])
    created = stream.get("ApproximateCreationDateTime")
    if created is not None and hasattr(created, "timestamp"):
        stream["ApproximateCreationDateTime"] = float(int(created.timestamp()))
    return {
        "eventID": record["eventID"],
        "eventName": record["eventName"],
        "eventVersion": record.get("eventVersion", "1.1"),
        "eventSource": "aws:dynamodb",
        "awsRegion": record.get("awsRegion") or stream_arn.split(":")[3],
        "dynamodb": stream,
        "eventSourceARN": stream_arn,
    }


def matches(pattern: Mapping[str, Any], value: Any) -> bool:
    """Whether a record `value` matches an event filter pattern of exact values (what an event source
    mapping's FilterCriteria holds): each key's list names the values it may have, a nested object matches
    the nested value."""
    if not isinstance(value, Mapping):
        return False
    for key, wanted in pattern.items():
        if isinstance(wanted, Mapping):
            if not matches(wanted, value.get(key)):
                return False
        elif key not in value or value[key] not in wanted:
            return False
    return True


def scheduled_event(rule_name: str) -> dict[str, Any]:
    """What EventBridge sends a function when its schedule's rule `rule_name` fires."""
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": ACCOUNT_ID,
        "time": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": REGION,
        "resources": [f"arn:aws:events:{REGION}:{ACCOUNT_ID}:rule/{rule_name}"],
        "detail": {},
    }

"""DynamoBeamStore's idempotency records (items.py: `REQUEST#<request_id>#<user_id>`), each written by one
conditional request. The timeline of one request_id:

    claim    Put, on: no record, or one past expires_at (the TTL: DynamoDB deletes lazily), or one still in
             progress past lease_expires_at (its process died); else the refused put returns the record
             that holds it (ALL_OLD): a retry learns the first answer, or that it is in progress, at once
    keep     Update -> completed with the answer, on: still this claim's (claim_id) and in progress
    release  Delete, on: still this claim's (the request failed; a retry starts afresh)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from botocore.exceptions import ClientError

from ..records import RequestRecord
from .content import ContentStore, update_write
from .expressions import Expression
from .items import TTL_ATTRIBUTE, Item, load, request_item, request_key, serialize, serialize_json

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient
else:
    DynamoDBClient = Any

# a server that returns no old item on a refused claim (and whose record then went away): claims tried
MAX_CLAIM_ATTEMPTS = 3


def _refused(error: ClientError) -> bool:
    return error.response["Error"]["Code"] == "ConditionalCheckFailedException"


class RequestRecords:
    """The idempotency records' methods of DynamoBeamStore (a base class of it: its client and table)."""

    client: DynamoDBClient
    table_name: str
    content: ContentStore

    def claim_request(self, record: RequestRecord, now: int) -> RequestRecord | None:
        e = Expression()
        at = e.value({"N": str(now)})
        lapsed = f"({e.eq('status', 'in_progress')} AND {e.name('lease_expires_at')} <= {at})"
        free = e.any(e.missing(), f"{e.name(TTL_ATTRIBUTE)} <= {at}", lapsed)
        for _ in range(MAX_CLAIM_ATTEMPTS):
            try:
                self.client.put_item(
                    TableName=self.table_name,
                    Item=request_item(record),
                    **e.apply({"ConditionExpression": free}),
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                )
                return None
            except ClientError as error:
                if not _refused(error):
                    raise
                found = self.content.inline(cast(Item | None, error.response.get("Item")))
                held = load(RequestRecord, found)
                held = held or self._read(record.user_id, record.request_id)
                if held is not None and held.holds(now):
                    return held
        raise RuntimeError(f"request {record.request_id} could not be claimed nor read")

    def keep_answer(self, user_id: str, request_id: str, claim_id: str, answer: dict[str, Any]) -> bool:
        e = Expression()
        condition = e.all(e.eq("claim_id", claim_id), e.eq("status", "in_progress"))
        update = e.sets({"status": serialize("completed"), "answer": serialize_json(answer)})
        op = e.apply(
            {
                "Key": request_key(user_id, request_id),
                "UpdateExpression": update,
                "ConditionExpression": condition,
            }
        )
        self.content.offload([update_write(op)])  # a large answer to S3 first
        try:
            self.client.update_item(TableName=self.table_name, **op)
        except ClientError as error:
            if not _refused(error):
                raise
            return False
        return True

    def release_request(self, user_id: str, request_id: str, claim_id: str) -> None:
        e = Expression()
        try:
            self.client.delete_item(
                TableName=self.table_name,
                Key=request_key(user_id, request_id),
                **e.apply({"ConditionExpression": e.eq("claim_id", claim_id)}),
            )
        except ClientError as error:
            if not _refused(error):
                raise

    def get_request(self, user_id: str, request_id: str, now: int) -> RequestRecord | None:
        held = self._read(user_id, request_id)
        # TTL deletes lazily: an expired record may still be read, and is ignored
        return held if held is not None and held.expires_at > now else None

    def _read(self, user_id: str, request_id: str) -> RequestRecord | None:
        key = request_key(user_id, request_id)
        found = self.client.get_item(TableName=self.table_name, Key=key, ConsistentRead=True)
        return load(RequestRecord, self.content.inline(found.get("Item")))

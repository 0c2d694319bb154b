"""DynamoBeamStore's frames of streamed runs (items.py: `RUN#<id>` / `FRAME#<frame_seq>`, JSON with a TTL):
put in batches, one put on the condition that its number is free, read after a frame_seq. A frame too large
for its item is kept in S3 (content.py)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from botocore.exceptions import ClientError

from .content import ContentStore, put_write
from .expressions import Expression
from .items import MAX_FRAME, TTL_ATTRIBUTE, Item, frame_item, frame_sk, run_key
from .retry import batch_put

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient
else:
    DynamoDBClient = Any

# a run's frames put in one transaction with the check that it runs (DynamoDB takes 100 items in one)
FRAMES_PER_WRITE = 25


class RunFrames:
    """The frames' methods of DynamoBeamStore (a base class of it: its client, table, content and range
    query)."""

    client: DynamoDBClient
    table_name: str
    content: ContentStore

    def _query_range(self, pk: str, lo: str, hi: str, limit: int | None = None) -> Iterator[Item]:
        raise NotImplementedError

    def append_frames(self, run_id: str, frames: Sequence[Mapping[str, Any]], expires_at: int) -> None:
        items = [frame_item(run_id, f, expires_at) for f in frames]
        self.content.offload([put_write(item) for item in items])
        batch_put(self.client, self.table_name, items, f"frames of run {run_id}")

    def append_running_frames(
        self, run_id: str, frames: Sequence[Mapping[str, Any]], expires_at: int
    ) -> bool:
        items = [frame_item(run_id, f, expires_at) for f in frames]
        for start in range(0, len(items), FRAMES_PER_WRITE):
            if not self._put_while_running(run_id, items[start : start + FRAMES_PER_WRITE]):
                return False
        return True

    def _put_while_running(self, run_id: str, items: list[Item]) -> bool:
        """One transaction: the run still `running` (a ConditionCheck), and its frames put."""
        self.content.offload([put_write(item) for item in items], transaction=True)
        e = Expression()
        check = e.apply(
            {
                "TableName": self.table_name,
                "Key": run_key(run_id),
                "ConditionExpression": e.eq("status", "running"),
            }
        )
        puts = [{"Put": {"TableName": self.table_name, "Item": item}} for item in items]
        try:
            self.client.transact_write_items(TransactItems=cast(Any, [{"ConditionCheck": check}, *puts]))
        except ClientError as error:
            if error.response["Error"]["Code"] != "TransactionCanceledException":
                raise
            reasons = error.response.get("CancellationReasons", [])
            if not reasons or reasons[0].get("Code") != "ConditionalCheckFailed":
                raise
            return False
        return True

    def add_frame(self, run_id: str, frame: Mapping[str, Any], expires_at: int) -> bool:
        e = Expression()  # TTL deletes lazily: a frame past its time frees its number, though still stored
        condition = e.any(e.missing(), f"{e.name(TTL_ATTRIBUTE)} <= {e.value({'N': str(int(time.time()))})}")
        item = frame_item(run_id, frame, expires_at)
        self.content.offload([put_write(item)])
        try:
            self.client.put_item(
                TableName=self.table_name,
                Item=item,
                ConditionExpression=condition,
                ExpressionAttributeNames=e.names,
                ExpressionAttributeValues=e.values,
            )
        except ClientError as error:
            if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            return False
        return True

    def list_frames(
        self, run_id: str, *, after_seq: int = -1, limit: int | None = None
    ) -> list[dict[str, Any]]:
        if (limit is not None and limit <= 0) or after_seq >= MAX_FRAME:
            return []
        now = int(time.time())
        items = self._query_range(f"RUN#{run_id}", frame_sk(after_seq + 1), frame_sk(MAX_FRAME))
        # TTL deletes lazily: an expired frame may still be read, and is skipped
        found = [json_frame(i) for i in items if int(i[TTL_ATTRIBUTE]["N"]) > now]
        return found if limit is None else found[:limit]


def json_frame(item: Item) -> dict[str, Any]:
    frame: dict[str, Any] = json.loads(item["frame"]["S"])
    return frame

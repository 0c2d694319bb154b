"""A session's standing grants on DynamoDB: each is a `grant#<id>` attribute of the session item (put by
the step that grants it, items.py); revoking one is one conditional UpdateItem."""

from __future__ import annotations

from typing import TYPE_CHECKING

from botocore.exceptions import ClientError

from .expressions import Expression
from .items import GRANT_PREFIX, session_key

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient


def remove_grant(client: DynamoDBClient, table: str, session_id: str, grant_id: str, user_id: str) -> bool:
    """Remove the grant where the session is `user_id`'s and holds it; False, nothing written, where not."""
    e = Expression()
    attribute = GRANT_PREFIX + grant_id
    condition = e.all(e.exists(), e.eq("user_id", user_id), e.exists(attribute))
    update = e.removes(attribute)
    op = e.apply(
        {"Key": session_key(session_id), "UpdateExpression": update, "ConditionExpression": condition}
    )
    try:
        client.update_item(TableName=table, **op)
    except ClientError as error:
        if error.response["Error"]["Code"] == "ConditionalCheckFailedException":
            return False
        raise
    return True

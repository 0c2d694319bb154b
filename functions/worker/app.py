"""The queue worker: runs accepted jobs and producers' invoke requests, pushing frames to the session's
WebSocket connections; reports partial batch failures."""

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext
from riverbeam.aws.entry import lambda_entry
from riverbeam.aws.worker import handle_batch


@lambda_entry(correlation_id_path=None)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return handle_batch(event, context)

"""The approval events' publisher: fed by the table's DynamoDB stream (the outbox items each write
inserted), it puts their events on the EventBridge bus; reports partial batch failures."""

from typing import Any

from riverbeam.aws.coldstart import init_without_gc

# the function's init: the collector paused, what it made frozen (riverbeam.aws.coldstart)
with init_without_gc():
    from aws_lambda_powertools.utilities.typing import LambdaContext
    from riverbeam.aws import runtime
    from riverbeam.aws.entry import lambda_entry
    from riverbeam.aws.publisher import handle_stream

    runtime.prepare(store=False, events=True)


@lambda_entry(correlation_id_path=None)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return handle_stream(event, context)

"""The WebSocket routes `$connect` (only the session's owner subscribes) and `$disconnect`."""

from typing import Any

from riverbeam.aws.coldstart import init_without_gc

# the function's init: the collector paused, what it made frozen (riverbeam.aws.coldstart)
with init_without_gc():
    from aws_lambda_powertools.utilities.typing import LambdaContext
    from riverbeam.aws import runtime, websocket
    from riverbeam.aws.entry import lambda_entry

    runtime.prepare(tokens=True)


@lambda_entry()
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    if event.get("requestContext", {}).get("eventType") == "DISCONNECT":
        return websocket.disconnect(event)
    return websocket.connect(event)

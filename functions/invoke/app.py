"""POST /invoke and the WebSocket route `invoke`."""

from typing import Any

# the stages its routes run (accept; execute for an invoke run inline; jobs to abandon a job the queue
# refused), at init: RiverBeam imports them on first use, and no request should pay for them
import riverbeam.pipeline.jobs  # noqa: F401
from aws_lambda_powertools.utilities.typing import LambdaContext
from riverbeam.aws import websocket
from riverbeam.aws.entry import is_websocket, lambda_entry
from riverbeam.aws.http import http_app, invoke_routes

app = http_app(invoke_routes)


@lambda_entry()
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    if is_websocket(event):
        return websocket.message(event)
    return app.resolve(event, context)

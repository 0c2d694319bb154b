"""POST /invoke and the WebSocket route `invoke`."""

from typing import Any

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

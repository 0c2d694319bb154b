"""What behaves like Lambda, written once for the local stack and the tests alike: the events API Gateway
and the event sources hand a function (`api_gateway`, `event_sources`), and how a function is loaded and
called (`invocation`). Standard library only: a probe with nothing but a layer on its path can use it."""

from .api_gateway import (
    HTTP_API_ID,
    HTTP_STAGE,
    WEBSOCKET_API_ID,
    Connection,
    HttpAnswer,
    Request,
    api_gateway_id,
    authorizer_claims,
    connect_event,
    disconnect_event,
    http_answer,
    http_event,
    message_event,
    new_connection,
    selected_route,
)
from .event_sources import matches, scheduled_event, sqs_record, stream_record
from .invocation import ACCOUNT_ID, REGION, Handler, LambdaContext, load_handler

__all__ = [
    "ACCOUNT_ID",
    "HTTP_API_ID",
    "HTTP_STAGE",
    "REGION",
    "WEBSOCKET_API_ID",
    "Connection",
    "Handler",
    "HttpAnswer",
    "LambdaContext",
    "Request",
    "api_gateway_id",
    "authorizer_claims",
    "connect_event",
    "disconnect_event",
    "http_answer",
    "http_event",
    "load_handler",
    "matches",
    "message_event",
    "new_connection",
    "scheduled_event",
    "selected_route",
    "sqs_record",
    "stream_record",
]

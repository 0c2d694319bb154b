"""The WebSocket events API Gateway sends the handlers, checked as Powertools' parser models check them
(aws_lambda_powertools.utilities.parser.models.apigw_websocket: the same fields, aliases and types),
without importing the parser (the import budgets: docs/benchmarks.md). Here the `invoke` and `resume`
routes' message event; `$connect` and `$disconnect`'s are websocket.py's."""

# no `from __future__ import annotations`: models evaluate their annotations faster as objects

from datetime import datetime
from ipaddress import IPv4Network, IPv6Network
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class EventModel(BaseModel):
    model_config = ConfigDict(defer_build=True)


class Identity(EventModel):
    # Powertools' IPvAnyNetwork, without the import of pydantic.networks (its URL and e-mail types)
    source_ip: IPv4Network | IPv6Network = Field(alias="sourceIp")
    user_agent: str | None = Field(None, alias="userAgent")


class RequestContext(EventModel):
    extended_request_id: str = Field(alias="extendedRequestId")
    request_time: str = Field(alias="requestTime")
    stage: str = Field(alias="stage")
    connected_at: datetime = Field(alias="connectedAt")
    request_time_epoch: datetime = Field(alias="requestTimeEpoch")
    identity: Identity = Field(alias="identity")
    request_id: str = Field(alias="requestId")
    domain_name: str = Field(alias="domainName")
    connection_id: str = Field(alias="connectionId")
    api_id: str = Field(alias="apiId")


class MessageContext(RequestContext):
    route_key: str = Field(alias="routeKey")
    message_id: str = Field(alias="messageId")
    event_type: Literal["MESSAGE"] = Field(alias="eventType")
    message_direction: Literal["IN", "OUT"] = Field(alias="messageDirection")


class MessageEvent(EventModel):
    request_context: MessageContext = Field(alias="requestContext")
    is_base64_encoded: bool = Field(alias="isBase64Encoded")
    body: str | None = Field(None, alias="body")

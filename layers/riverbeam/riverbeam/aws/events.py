"""The WebSocket events API Gateway sends the handlers, checked as Powertools' parser models check them
(aws_lambda_powertools.utilities.parser.models.apigw_websocket: the same fields, aliases and types), but
built on first use: importing Powertools' parser builds every model it has, for every AWS event source,
at each cold start."""

# no `from __future__ import annotations`: models evaluate their annotations faster as objects

from datetime import datetime
from ipaddress import IPv4Network, IPv6Network
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class _Event(BaseModel):
    model_config = ConfigDict(defer_build=True)


class Identity(_Event):
    # Powertools' IPvAnyNetwork, without the import of pydantic.networks (its URL and e-mail types)
    source_ip: IPv4Network | IPv6Network = Field(alias="sourceIp")
    user_agent: str | None = Field(None, alias="userAgent")


class RequestContext(_Event):
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


class ConnectContext(RequestContext):
    route_key: Literal["$connect"] = Field(alias="routeKey")
    event_type: Literal["CONNECT"] = Field(alias="eventType")
    message_direction: Literal["IN"] = Field(alias="messageDirection")


class DisconnectContext(RequestContext):
    route_key: Literal["$disconnect"] = Field(alias="routeKey")
    disconnect_status_code: int = Field(alias="disconnectStatusCode")
    event_type: Literal["DISCONNECT"] = Field(alias="eventType")
    message_direction: Literal["IN"] = Field(alias="messageDirection")
    disconnect_reason: str = Field(alias="disconnectReason")


class ConnectEvent(_Event):
    headers: dict[str, str] = Field(alias="headers")
    multi_value_headers: dict[str, list[str]] = Field(alias="multiValueHeaders")
    request_context: ConnectContext = Field(alias="requestContext")
    is_base64_encoded: bool = Field(alias="isBase64Encoded")
    query_string_parameters: dict[str, str] | None = Field(None, alias="queryStringParameters")


class DisconnectEvent(_Event):
    headers: dict[str, str] = Field(alias="headers")
    multi_value_headers: dict[str, list[str]] = Field(alias="multiValueHeaders")
    request_context: DisconnectContext = Field(alias="requestContext")
    is_base64_encoded: bool = Field(alias="isBase64Encoded")


class MessageEvent(_Event):
    request_context: MessageContext = Field(alias="requestContext")
    is_base64_encoded: bool = Field(alias="isBase64Encoded")
    body: str | None = Field(None, alias="body")

"""A `bedrock-runtime` client whose ConverseStream calls botocore's Stubber answers (requests checked against
the API's own shapes), and events shaped as the ConverseStream API documents them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
from botocore.exceptions import EventStreamError
from botocore.stub import Stubber

MODEL = "anthropic.claude-3-5-haiku-20241022-v1:0"
USAGE = {"inputTokens": 12, "outputTokens": 5, "totalTokens": 17}


def text_events(*chunks: str, stop: str = "end_turn") -> list[dict[str, Any]]:
    return [
        {"messageStart": {"role": "assistant"}},
        *({"contentBlockDelta": {"delta": {"text": c}, "contentBlockIndex": 0}} for c in chunks),
        {"contentBlockStop": {"contentBlockIndex": 0}},
        {"messageStop": {"stopReason": stop}},
        {"metadata": {"usage": USAGE, "metrics": {"latencyMs": 120}}},
    ]


def tool_events(*calls: tuple[str, str, list[str]], text: str = "") -> list[dict[str, Any]]:
    """A turn asking for tools: (toolUseId, name, the input's JSON fragments) each."""
    events: list[dict[str, Any]] = [{"messageStart": {"role": "assistant"}}]
    if text:
        events.append({"contentBlockDelta": {"delta": {"text": text}, "contentBlockIndex": 0}})
    for index, (use_id, name, fragments) in enumerate(calls, start=1):
        start = {"start": {"toolUse": {"toolUseId": use_id, "name": name}}, "contentBlockIndex": index}
        events.append({"contentBlockStart": start})
        for fragment in fragments:
            delta = {"delta": {"toolUse": {"input": fragment}}, "contentBlockIndex": index}
            events.append({"contentBlockDelta": delta})
        events.append({"contentBlockStop": {"contentBlockIndex": index}})
    events += [{"messageStop": {"stopReason": "tool_use"}}, {"metadata": {"usage": USAGE, "metrics": {}}}]
    return events


def failing_midway(events: list[dict[str, Any]], code: str) -> Iterator[dict[str, Any]]:
    """The events, then the error botocore raises for an exception event in the stream."""
    yield from events
    raise EventStreamError({"Error": {"Code": code, "Message": "slow down"}}, "ConverseStream")


class Bedrock:
    """A bedrock-runtime client answered by a Stubber; `requests` holds what each call sent."""

    def __init__(self) -> None:
        self.client = boto3.client("bedrock-runtime", region_name="us-east-1")
        self.stubber = Stubber(self.client)
        self.requests: list[dict[str, Any]] = []
        self.client.meta.events.register("provide-client-params.bedrock-runtime.*", self._record)
        self.stubber.activate()

    def _record(self, params: dict[str, Any], **_: Any) -> None:
        self.requests.append(params)

    def answer(self, events: Any) -> None:
        response: dict[str, Any] = {"stream": {}}
        self.stubber.add_response("converse_stream", response)
        response["stream"] = events  # an event stream cannot be stubbed as a list: filled in after

    def fail(self, code: str, status: int) -> None:
        self.stubber.add_client_error("converse_stream", service_error_code=code, http_status_code=status)

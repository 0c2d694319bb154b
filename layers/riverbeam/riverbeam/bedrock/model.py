"""Amazon Bedrock's ConverseStream behind the ChatModel interface: tool use, streamed text, every stop
reason, and retries of throttling and outages (at call time and mid-stream) with backoff and jitter."""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Sequence
from typing import Any

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectTimeoutError,
    CredentialRetrievalError,
    EndpointConnectionError,
    NoCredentialsError,
    NoRegionError,
    PartialCredentialsError,
)

from ..agent.llm import ModelTurn, OnText
from ..errors import BeamError
from ..models import NewMessage
from ..tools import Tool
from .converse_stream import StreamedTurn
from .messages import ConversationWindow, converse_messages, converse_name, tool_config

logger = logging.getLogger(__name__)

# error codes compared lower-cased: botocore names a mid-stream error in camelCase (`throttlingException`)
RETRYABLE = frozenset(
    {
        "throttlingexception",
        "serviceunavailableexception",
        "internalserverexception",
        "modelnotreadyexception",
    }
)
FAILURES = {
    "validationexception": "BEM-346",
    "accessdeniedexception": "BEM-347",
    "unrecognizedclientexception": "BEM-347",
    "expiredtokenexception": "BEM-347",
    "resourcenotfoundexception": "BEM-348",
}
FAILED_STOPS = {
    "guardrail_intervened": "BEM-340",
    "content_filtered": "BEM-341",
    "malformed_model_output": "BEM-342",
    "malformed_tool_use": "BEM-343",
    "model_context_window_exceeded": "BEM-344",
}
CUT_SHORT = "\n\n[The answer was cut short: the model reached its output token limit.]"
DEFAULT_MAX_ATTEMPTS = 4
BASE_DELAY_SECONDS = 0.5
MAX_DELAY_SECONDS = 8.0


class BedrockConverseModel:
    """`model_id` on Bedrock's ConverseStream. `client` is a `bedrock-runtime` client (by default one made
    on first use, so importing costs nothing); `system` a system prompt; `inference` Converse's
    inferenceConfig (maxTokens, temperature, topP, stopSequences). A throttled or unavailable model is
    tried `max_attempts` times in all, within `retry_seconds`."""

    # OpenTelemetry's name of the provider, on each model call's `chat` span
    provider_name = "aws.bedrock"

    def __init__(
        self,
        model_id: str,
        *,
        client: Any = None,
        system: str | None = None,
        inference: dict[str, Any] | None = None,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        retry_seconds: float = 120.0,
        window: ConversationWindow | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.model_id = model_id
        self.system = system
        self.inference = dict(inference or {})
        self.max_attempts = max(1, max_attempts)
        self.retry_seconds = retry_seconds
        self.window = window or ConversationWindow()
        self._client = client
        self._sleep = sleep

    @property
    def client(self) -> Any:
        if self._client is None:
            import boto3
            from botocore.config import Config

            # retries are this model's own (mid-stream errors included), not botocore's as well
            self._client = boto3.client(
                "bedrock-runtime", config=Config(retries={"max_attempts": 1, "mode": "standard"})
            )
        return self._client

    def request(self, conversation: Sequence[NewMessage], tools: Sequence[Tool]) -> dict[str, Any]:
        """The ConverseStream arguments for this conversation."""
        request: dict[str, Any] = {
            "modelId": self.model_id,
            "messages": converse_messages(conversation, self.window),
        }
        if self.system:
            request["system"] = [{"text": self.system}]
        if self.inference:
            request["inferenceConfig"] = self.inference
        config = tool_config(tools)
        if config is not None:
            request["toolConfig"] = config
        return request

    def next_turn(
        self, conversation: Sequence[NewMessage], tools: Sequence[Tool], on_text: OnText
    ) -> ModelTurn:
        request = self.request(conversation, tools)
        deadline = time.monotonic() + self.retry_seconds
        streamed = 0  # characters the client has seen, over every attempt
        for attempt in range(1, self.max_attempts + 1):
            turn = StreamedTurn(on_text, skip=streamed)
            try:
                turn.read(self.client.converse_stream(**request)["stream"])
            except BotoCoreError as error:  # before an answer: no credentials, no region, no network
                raise self._unreachable(error) from None
            except ClientError as error:
                streamed = max(streamed, turn.streamed)
                delay = self._retry_delay(error, attempt, deadline)
                if delay is None:
                    raise self._failure(error, attempt) from None
                logger.warning(
                    "the model call failed; trying again",
                    extra={"model_id": self.model_id, "code": _code(error), "attempt": attempt},
                )
                self._sleep(delay)
                continue
            return self._finish(turn, {converse_name(t.name): t.name for t in tools})
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _retry_delay(self, error: ClientError, attempt: int, deadline: float) -> float | None:
        """How long to wait before the next attempt (exponential, full jitter), or None: do not retry."""
        if _code(error).lower() not in RETRYABLE or attempt >= self.max_attempts:
            return None
        delay = random.uniform(0, min(MAX_DELAY_SECONDS, BASE_DELAY_SECONDS * 2 ** (attempt - 1)))
        return delay if time.monotonic() + delay < deadline else None

    def _failure(self, error: ClientError, attempts: int) -> BeamError:
        code = _code(error)
        logger.error("the model call failed", extra={"model_id": self.model_id, "code": code}, exc_info=error)
        if code.lower() in RETRYABLE:
            return BeamError("BEM-345", f"{self.model_id}: {code} after {attempts} attempts")
        said = str(error.response.get("Error", {}).get("Message") or "")[:300]  # Bedrock's why, as it says it
        return BeamError(
            FAILURES.get(code.lower(), "BEM-346"), f"{self.model_id}: {code}" + (f": {said}" if said else "")
        )

    def _unreachable(self, error: BotoCoreError) -> BeamError:
        """A call that never reached the model, as a code naming the cause and the model."""
        logger.error("the model could not be called", extra={"model_id": self.model_id}, exc_info=error)
        region = getattr(getattr(self._client, "meta", None), "region_name", None) or "no region"
        if isinstance(error, NoCredentialsError | PartialCredentialsError | CredentialRetrievalError):
            return BeamError(
                "BEM-357", f"{self.model_id}: no AWS credentials to call it ({type(error).__name__})"
            )
        if isinstance(error, NoRegionError):
            return BeamError(
                "BEM-358", f"{self.model_id}: no AWS region is set (AWS_DEFAULT_REGION) to call it in"
            )
        if isinstance(error, EndpointConnectionError | ConnectTimeoutError):
            message = (
                f"{self.model_id}: Bedrock in {region} cannot be reached (no network, or no Bedrock there)"
            )
            return BeamError("BEM-359", message)
        return BeamError(
            "BEM-359", f"{self.model_id}: the call failed before an answer: {type(error).__name__}"
        )

    def _finish(self, turn: StreamedTurn, names: dict[str, str]) -> ModelTurn:
        """The turn, its tool calls named as the agent's tools are (`names`: each one's Converse name)."""
        text = "".join(turn.text)
        reason = turn.stop_reason
        if reason in FAILED_STOPS:
            raise BeamError(FAILED_STOPS[reason], f"{self.model_id} stopped: {reason}")
        if reason == "max_tokens":  # what was said stands; a tool call it was writing is dropped
            turn.on_text(CUT_SHORT)
            return ModelTurn(text=text + CUT_SHORT, usage=turn.usage)
        calls = [c.model_copy(update={"name": names.get(c.name, c.name)}) for c in turn.calls()]
        return ModelTurn(text=text, tool_calls=calls, usage=turn.usage)


def _code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code") or "Unknown")

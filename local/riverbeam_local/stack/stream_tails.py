"""The event source mappings of the table's stream, as the local stack runs them: a StreamTail per function
the template feeds from it (the approval events' publisher, the Slack notifier), each reading the stream
from its end on its own (one failing delays only its own records); and the banner's line of the approval
channels that are on (CONTRACT 16)."""

from __future__ import annotations

import functools
import logging
import os
import threading
from typing import Any

from . import template as template_module

log = logging.getLogger("riverbeam_local")


def stream_tails(
    dynamodb: Any, table_name: str, template: template_module.Template, functions: Any, wake: threading.Event
) -> list[Any]:
    """A tail per stream consumer (none where the table's server keeps no stream: the approval events
    are then not published). Only the publisher's tail logs the events it hands on."""
    import boto3

    from . import services as aws
    from .table_stream import StreamTail

    if not template.stream_consumers:
        return []
    arn = aws.stream_arn(dynamodb, table_name)
    if arn is None:
        log.warning("table %s has no stream: the approval events are not published", table_name)
        return []
    publisher = template.stream_consumer
    return [
        StreamTail(
            boto3.client("dynamodbstreams"),
            arn,
            functools.partial(functions.call, source.function),
            pattern=source.pattern,
            batch_size=source.batch_size,
            max_retries=source.max_retries,
            wake=wake,
            log_taken=source is publisher,
        )
        for source in template.stream_consumers
    ]


def channels_line() -> str:
    """Which approval channels are on: Slack with a bot token and a signing secret (and where its Web API
    is, SLACK_API_URL), or off and what turns it on; mail, always, as files under the data dir."""
    return f"{_slack_line()}; mail on (files under <data dir>/mail, links in the log)"


def _slack_line() -> str:
    token = bool(os.environ.get("RIVERBEAM_SLACK_BOT_TOKEN"))
    signing = bool(os.environ.get("RIVERBEAM_SLACK_SIGNING_SECRET"))
    if token and signing:
        url = os.environ.get("SLACK_API_URL") or "https://slack.com/api/"
        return f"Channels:        slack on ({url}; interactivity: POST /channels/slack)"
    return "Channels:        slack off (set RIVERBEAM_SLACK_BOT_TOKEN and RIVERBEAM_SLACK_SIGNING_SECRET)"

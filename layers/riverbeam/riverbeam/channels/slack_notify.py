"""The Slack notifier's work, one approval event at a time: the action's message posted (once) where
agents.yaml's `notify.slack` says, and updated (`chat.update`) for everyone on every later event. Each
event shows the action as the store holds it then, so events delivered late, again or out of order leave
the message right; an action whose message was never posted (Slack was down) is posted as it stands."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from beam_store import Action, BeamStore, TextPart
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from ..agent.channels_config import notify_of
from . import records, slack_blocks

logger = logging.getLogger(__name__)
# the agent's last words, as far as the message shows them
WORDS_LIMIT = 600
# Slack's refusals that no retry changes: the event is logged and passed over (retried, it would hold up
# the later messages of the stream for nothing); any other failure is raised, and the event comes again
PERMANENT = frozenset(
    {
        "channel_not_found",
        "not_in_channel",
        "is_archived",
        "message_not_found",
        "cant_update_message",
        "invalid_blocks",
        "msg_too_long",
        "invalid_arguments",
    }
)


def last_words(store: BeamStore, action: Action) -> str | None:
    """What the asking run's model said last, in text, where it said anything."""
    said = [
        part.text
        for m in store.list_messages(action.session_id)
        if m.run_id == action.run_id and m.role == "ai"
        for part in m.content
        if isinstance(part, TextPart) and part.text.strip()
    ]
    if not said:
        return None
    words = said[-1].strip()
    return words if len(words) <= WORDS_LIMIT else words[: WORDS_LIMIT - 1] + "…"


def show(store: BeamStore, client: WebClient, action: Action, channel: str) -> str:
    """Post the action's message, or update it where it was posted; returns how (`posted`, `updated`).
    Raises what Slack raises (the event is delivered again, and nothing is lost)."""
    shown = slack_blocks.message(action, last_words(store, action))
    where = records.claim_post(store, action.action_id)
    if where.claim_id is None:
        assert where.channel is not None and where.ts is not None
        client.chat_update(channel=where.channel, ts=where.ts, **shown)
        return "updated"
    try:
        answer = client.chat_postMessage(
            channel=channel, unfurl_links=False, unfurl_media=False, link_names=False, **shown
        )
    except Exception:
        records.release_post(store, action.action_id, where.claim_id)
        raise
    records.keep_post(store, action.action_id, where.claim_id, str(answer["channel"]), str(answer["ts"]))
    return "posted"


def on_event(store: BeamStore, client: WebClient, config: Any, detail: Mapping[str, Any]) -> str | None:
    """One approval event's effect on Slack (None: the action's tool notifies no Slack channel)."""
    action = store.get_action(str(detail["action_id"]))
    if action is None:
        return None
    notify = notify_of(config, action)
    if notify is None or notify.slack is None:
        return None
    try:
        how = show(store, client, action, notify.slack.channel)
    except SlackApiError as error:
        code = str(error.response.get("error", ""))
        if code not in PERMANENT:
            raise
        logger.error("slack refused the message", extra={"action_id": action.action_id, "error": code})
        return f"refused: {code}"
    logger.info("slack message %s", how, extra={"action_id": action.action_id, "status": action.status})
    return how


def refresh(store: BeamStore, client: WebClient, action_id: str) -> bool:
    """Update the action's posted message to the action as it stands (a vote); False where none was
    posted."""
    action = store.get_action(action_id)
    where = records.posted(store, action_id)
    if action is None or where is None:
        return False
    channel, ts = where
    client.chat_update(channel=channel, ts=ts, **slack_blocks.message(action, last_words(store, action)))
    return True

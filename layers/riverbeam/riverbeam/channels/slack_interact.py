"""Slack's interactivity requests (`POST /channels/slack`): the signature checked before anything else
(slack_sdk's SignatureVerifier; the timestamp within 5 minutes; the same signature refused again while its
window lasts, by a conditional write), then Approve, Reject (a modal asks the reason) and the modal's
submission, each decided as the person agents.yaml's `people:` maps the Slack user to, through the same
resume as every answer (exactly once, four eyes, quorum, expiry). A person who may not answer is told so in
a message only they see (chat.postEphemeral); the message is updated for everyone (chat.update)."""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import parse_qs

from beam_store import BeamStore
from slack_sdk import WebClient
from slack_sdk.signature import SignatureVerifier

from ..agent.channels_config import Person, person_of_slack
from ..errors import BeamError
from ..models import AuthContext
from . import records, slack_blocks, slack_notify

logger = logging.getLogger(__name__)
WINDOW_SECONDS = 5 * 60
# a click's request_id: the same person's same answer twice is one request (retries.py answers it once)
CLICKS = uuid.UUID("6f1d3c1e-6b47-4d8e-9a57-2f9a1b0c5d11")
Resume = Callable[[dict[str, Any], AuthContext], Any]


def check_signature(
    store: BeamStore, secret: str, body: bytes, headers: Mapping[str, str], now: float | None = None
) -> None:
    """Raise the 401 BeamError of a forged, stale, tampered or replayed request (`headers` lower-cased)."""
    timestamp = headers.get("x-slack-request-timestamp", "")
    signature = headers.get("x-slack-signature", "")
    if not timestamp or not signature:
        raise BeamError("BEM-095", "the request has no X-Slack-Signature or timestamp", field="headers")
    now = time.time() if now is None else now
    if not timestamp.isdigit() or abs(now - int(timestamp)) > WINDOW_SECONDS:
        raise BeamError("BEM-096", field="x-slack-request-timestamp")
    if not SignatureVerifier(secret).is_valid(body, timestamp, signature):
        raise BeamError("BEM-095", field="x-slack-signature")
    if not records.first_use(store, signature, WINDOW_SECONDS):
        raise BeamError("BEM-097", field="x-slack-signature")


def payload_of(body: bytes) -> dict[str, Any]:
    """The form's `payload` (JSON), as Slack sends interactivity requests."""
    try:
        (raw,) = parse_qs(body.decode(), strict_parsing=True)["payload"]
        found = json.loads(raw)
    except (ValueError, KeyError, UnicodeDecodeError):
        raise BeamError("BEM-001", "the body has no JSON `payload` form field", field="payload") from None
    if not isinstance(found, dict):
        raise BeamError("BEM-001", "the payload is not a JSON object", field="payload")
    return found


class Interaction:
    """One verified request's answer, with what it needs: the store, the Web API client, people, resume."""

    def __init__(
        self, store: BeamStore, client: WebClient, people: Mapping[str, Person], resume: Resume
    ) -> None:
        self.store, self.client, self.people, self.resume = store, client, people, resume

    def handle(self, payload: Mapping[str, Any]) -> dict[str, Any] | None:
        """Slack's answer (None: an empty 200, which closes a modal)."""
        kind = payload.get("type")
        if kind == "block_actions":
            self._clicked(payload)
        elif (
            kind == "view_submission"
            and payload.get("view", {}).get("callback_id") == slack_blocks.REJECT_VIEW
        ):
            self._rejected(payload)
        return None

    def _clicked(self, payload: Mapping[str, Any]) -> None:
        clicked = (payload.get("actions") or [{}])[0]
        action_id = str(clicked.get("value", ""))
        where = payload.get("container") or {}
        channel, ts = str(where.get("channel_id", "")), str(where.get("message_ts", ""))
        slack_user = str((payload.get("user") or {}).get("id", ""))
        if clicked.get("action_id") == slack_blocks.APPROVE:
            self.decide(action_id, slack_user, "submitted", None, channel)
        elif clicked.get("action_id") == slack_blocks.REJECT and self._person(slack_user, channel):
            view = slack_blocks.reject_view(action_id, channel, ts)
            self.client.views_open(trigger_id=str(payload.get("trigger_id", "")), view=view)

    def _rejected(self, payload: Mapping[str, Any]) -> None:
        view = payload["view"]
        meta = json.loads(view.get("private_metadata") or "{}")
        state = view.get("state", {}).get("values", {})
        reason = state.get(slack_blocks.REASON_BLOCK, {}).get(slack_blocks.REASON_INPUT, {}).get("value")
        slack_user = str((payload.get("user") or {}).get("id", ""))
        self.decide(
            str(meta.get("action_id", "")), slack_user, "cancelled", reason, str(meta.get("channel", ""))
        )

    def _person(self, slack_user: str, channel: str) -> tuple[str, Person] | None:
        found = person_of_slack(self.people, slack_user)
        if found is None:
            self.tell(
                channel, slack_user, BeamError("BEM-098", f"Slack user {slack_user} is in no `people:` entry")
            )
        return found

    def decide(self, action_id: str, slack_user: str, status: str, reason: str | None, channel: str) -> None:
        """Answer the action as the mapped person; a refusal is told to them alone."""
        found = self._person(slack_user, channel)
        if found is None:
            return
        user_id, person = found
        action = self.store.get_action(action_id)
        if action is None:
            self.tell(channel, slack_user, BeamError("BEM-027", f"action {action_id} not found"))
            return
        answer = {
            "action_id": action_id,
            "status": status,
            "reason": reason,
            "args_sha256": action.args_sha256,
            "request_id": str(uuid.uuid5(CLICKS, f"{action_id}:{user_id}:{status}")),
        }
        body = {
            "agent_name": action.agent_name,
            "session_id": action.session_id,
            "interaction_id": action.interaction_id,
            "actions": [answer],
        }
        try:
            self.resume(body, AuthContext(user_id=user_id, groups=list(person.groups)))
        except BeamError as error:
            self.tell(channel, slack_user, error)
            return
        logger.info("slack answer", extra={"action_id": action_id, "user_id": user_id, "status": status})
        try:  # everyone sees the vote or the decision at once (the notifier updates it again)
            slack_notify.refresh(self.store, self.client, action_id)
        except Exception:
            logger.exception("the message was not updated", extra={"action_id": action_id})

    def tell(self, channel: str, slack_user: str, error: BeamError) -> None:
        """A message only the person sees: why their answer was not taken."""
        logger.info("slack answer refused", extra={"code": error.code, "slack_user": slack_user})
        text = slack_blocks.escaped(f"Your answer was not taken ({error.code}): {error.message}")
        try:
            self.client.chat_postEphemeral(channel=channel, user=slack_user, text=text)
        except Exception:
            logger.exception("the refusal was not told", extra={"code": error.code})

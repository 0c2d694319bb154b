"""What the channels keep in the store, as idempotency records (one conditional write each, no item kind
of their own): a Slack request's signature, refused a second time while the timestamp window lasts (and a
mail link's token, used once), and an action's posted message (its channel and ts; a mail sent), claimed
before it is posted so that an event delivered again never posts it twice. Their `user_id`s start with `#`,
which no caller's has (their keys never meet)."""

from __future__ import annotations

import hashlib
import time
import uuid
from datetime import UTC, datetime
from typing import Any

from beam_store import BeamStore, RequestRecord

SIGNATURES = "#slack-signature"
MESSAGES = "#slack-message"
# a message is kept as long as an action may wait, and then some
MESSAGE_DAYS = 30
# a post that takes longer than this is taken for a dead one's: the next delivery posts again
POST_LEASE_SECONDS = 60


def _record(user_id: str, request_id: str, *, lease: int, ttl: int, completed: bool) -> RequestRecord:
    now = int(time.time())
    return RequestRecord(
        user_id=user_id,
        request_id=request_id,
        request_sha256="",
        status="completed" if completed else "in_progress",
        claim_id=uuid.uuid4().hex,
        answer={} if completed else None,
        created_at=datetime.now(UTC).isoformat(),
        lease_expires_at=now + lease,
        expires_at=now + ttl,
    )


def first_use(store: BeamStore, signature: str, window_seconds: int, *, kind: str = SIGNATURES) -> bool:
    """Whether this is the first time the signature (or a mail token's id) is seen in its window (and it
    is kept for it)."""
    digest = hashlib.sha256(signature.encode()).hexdigest()
    record = _record(kind, digest, lease=window_seconds, ttl=window_seconds, completed=True)
    return store.claim_request(record, int(time.time())) is None


class Posted:
    """Where an action's message is (`channel`, `ts`), or that it is being posted (`claim_id`)."""

    def __init__(self, channel: str | None, ts: str | None, claim_id: str | None) -> None:
        self.channel, self.ts, self.claim_id = channel, ts, claim_id


def claim_post(store: BeamStore, action_id: str, *, kind: str = MESSAGES) -> Posted:
    """The action's message as kept; or, where none is, a claim to post it (`claim_id`). Raises
    RuntimeError where another is posting it now (the event is delivered again later)."""
    record = _record(kind, action_id, lease=POST_LEASE_SECONDS, ttl=MESSAGE_DAYS * 86400, completed=False)
    held = store.claim_request(record, int(time.time()))
    if held is None:
        return Posted(None, None, record.claim_id)
    if held.status != "completed" or not held.answer:
        raise RuntimeError(f"the message of action {action_id} is being posted")
    return Posted(str(held.answer["channel"]), str(held.answer["ts"]), None)


def keep_post(
    store: BeamStore, action_id: str, claim_id: str, channel: str, ts: str, *, kind: str = MESSAGES
) -> None:
    store.keep_answer(kind, action_id, claim_id, {"channel": channel, "ts": ts})


def release_post(store: BeamStore, action_id: str, claim_id: str, *, kind: str = MESSAGES) -> None:
    store.release_request(kind, action_id, claim_id)


def posted(store: BeamStore, action_id: str) -> tuple[str, str] | None:
    """The channel and ts of the action's message, where it was posted."""
    held = store.get_request(MESSAGES, action_id, int(time.time()))
    answer: dict[str, Any] | None = held.answer if held is not None else None
    if not answer:
        return None
    return str(answer["channel"]), str(answer["ts"])

"""Approvals by mail (CONTRACT 16): each approver `notify.email.to` names gets a message with a link per
decision. A link's token is signed (HS256, PyJWT), names the action, the approver and the decision, expires
with the action, and is used once (a conditional write). The link opens a page that shows the action and
asks to confirm: a GET never decides (mail scanners open links); the page's form POSTs, and that decides,
as the approver, through the same resume as every answer."""

from __future__ import annotations

import html
import json
import time
import uuid
from collections.abc import Callable, Mapping
from datetime import datetime
from email.message import EmailMessage
from typing import Any

import jwt
from beam_store import Action, BeamStore

from ..agent.channels_config import Person, notify_of
from ..errors import BeamError
from ..models import AuthContext
from . import records

ALGORITHM = "HS256"
DECISIONS = {"approve": "submitted", "reject": "cancelled"}
# an action with no time limit: its links last this long
DEFAULT_SECONDS = 24 * 3600
TOKENS = "#mail-token"
SENT = "#mail-sent"
Send = Callable[[EmailMessage], None]
Resume = Callable[[dict[str, Any], AuthContext], Any]


def _expiry(action: Action) -> int:
    if action.expires_at is None:
        return int(time.time()) + DEFAULT_SECONDS
    return int(datetime.fromisoformat(action.expires_at).timestamp())


def token(key: str, action: Action, user_id: str, decision: str) -> str:
    claims = {"act": action.action_id, "sub": user_id, "dec": decision, "exp": _expiry(action)}
    return jwt.encode(claims | {"jti": uuid.uuid4().hex}, key, algorithm=ALGORITHM)


def claims_of(key: str, given: str) -> dict[str, Any]:
    """The token's claims; 401 BEM-099 where it is forged, tampered, expired or not one of ours."""
    try:
        found: dict[str, Any] = jwt.decode(
            given, key, algorithms=[ALGORITHM], options={"require": ["act", "sub", "dec", "exp", "jti"]}
        )
    except jwt.ExpiredSignatureError:
        raise BeamError("BEM-099", "the link expired with its action", field="token") from None
    except jwt.InvalidTokenError:
        raise BeamError("BEM-099", field="token") from None
    if found["dec"] not in DECISIONS:
        raise BeamError("BEM-099", field="token")
    return found


def _people_by_address(people: Mapping[str, Person]) -> dict[str, tuple[str, Person]]:
    return {p.email.lower(): (user_id, p) for user_id, p in people.items() if p.email}


def message(key: str, base_url: str, action: Action, user_id: str, address: str) -> EmailMessage:
    links = {d: f"{base_url.rstrip('/')}/channels/email/{token(key, action, user_id, d)}" for d in DECISIONS}
    mail = EmailMessage()
    mail["To"] = address
    mail["Subject"] = f"Approve {action.tool}? (asked by {action.user_id})"
    args = json.dumps(action.args, ensure_ascii=False, indent=2, sort_keys=True)
    mail.set_content(
        f"{action.user_id} (agent {action.agent_name}) asks to run {action.tool} with:\n\n{args}\n\n"
        f"args sha256 {action.args_sha256}\nanswer by {action.expires_at or 'any time'}\n\n"
        f"Approve: {links['approve']}\nReject: {links['reject']}\n\n"
        "Each link opens a page that asks you to confirm.\n"
    )
    return mail


def on_event(
    store: BeamStore, config: Any, key: str, base_url: str, send: Send, detail: Mapping[str, Any]
) -> int:
    """An Approval Requested event's mail, one per address of its tool's `notify.email.to`, each sent once
    (a claim per action and person); returns how many were sent now."""
    if detail.get("status") != "pending":
        return 0
    action = store.get_action(str(detail["action_id"]))
    notify = notify_of(config, action) if action is not None else None
    if action is None or notify is None or notify.email is None or action.status != "pending":
        return 0
    known = _people_by_address(config.people)
    sent = 0
    for address in notify.email.to:
        user_id, _ = known[address.lower()]  # the file's check: every address maps to a person
        claim = records.claim_post(store, f"{action.action_id}:{user_id}", kind=SENT)
        if claim.claim_id is None:
            continue  # sent before: a delivery again sends nothing
        try:
            send(message(key, base_url, action, user_id, address))
        except Exception:
            records.release_post(store, f"{action.action_id}:{user_id}", claim.claim_id, kind=SENT)
            raise
        records.keep_post(store, f"{action.action_id}:{user_id}", claim.claim_id, address, "sent", kind=SENT)
        sent += 1
    return sent


def page(title: str, body: str, status: int = 200) -> dict[str, Any]:
    """An HTML answer; everything in `body` was escaped by its caller."""
    text = (
        "<!doctype html><html><head><meta charset='utf-8'><title>"
        f"{html.escape(title)}</title></head><body><h1>{html.escape(title)}</h1>{body}</body></html>"
    )
    headers = {
        "Content-Type": "text/html; charset=utf-8",
        "Cache-Control": "no-store",
        "Content-Security-Policy": "default-src 'none'; form-action 'self'",
        "Referrer-Policy": "no-referrer",
    }
    return {"statusCode": status, "headers": headers, "body": text}


def confirmation(store: BeamStore, key: str, given: str) -> dict[str, Any]:
    """GET: the action and a form to confirm the decision; decides nothing."""
    claims = claims_of(key, given)
    action = store.get_action(str(claims["act"]))
    if action is None:
        raise BeamError("BEM-027", field="token")
    args = html.escape(json.dumps(action.args, ensure_ascii=False, indent=2, sort_keys=True))
    verb = "Approve" if claims["dec"] == "approve" else "Reject"
    reason = "" if verb == "Approve" else "<p><label>Why? <textarea name='reason'></textarea></label></p>"
    body = (
        f"<p>{html.escape(action.user_id)} (agent {html.escape(action.agent_name)}) asks to run "
        f"<code>{html.escape(action.tool)}</code> with:</p><pre>{args}</pre>"
        f"<p>args sha256 {html.escape(action.args_sha256)}; now {html.escape(action.status)}</p>"
        f"<form method='post'>{reason}<button type='submit'>{verb} as "
        f"{html.escape(str(claims['sub']))}</button></form>"
    )
    return page(f"{verb} {action.tool}?", body)


def decide(
    store: BeamStore, key: str, given: str, people: Mapping[str, Person], resume: Resume, reason: str | None
) -> dict[str, Any]:
    """POST: the decision, once: the token's first use (a conditional write), then the resume."""
    claims = claims_of(key, given)
    action = store.get_action(str(claims["act"]))
    if action is None:
        raise BeamError("BEM-027", field="token")
    if not records.first_use(store, str(claims["jti"]), int(claims["exp"] - time.time()) + 60, kind=TOKENS):
        raise BeamError("BEM-099", "the link was used before", field="token")
    user_id = str(claims["sub"])
    person = people.get(user_id)
    body = {
        "agent_name": action.agent_name,
        "session_id": action.session_id,
        "interaction_id": action.interaction_id,
        "actions": [
            {
                "action_id": action.action_id,
                "status": DECISIONS[str(claims["dec"])],
                "reason": reason or None,
                "args_sha256": action.args_sha256,
                "request_id": str(uuid.uuid5(uuid.NAMESPACE_URL, f"mail:{claims['jti']}")),
            }
        ],
    }
    resume(body, AuthContext(user_id=user_id, groups=list(person.groups) if person else []))
    done = "approved" if claims["dec"] == "approve" else "rejected"
    return page("Done", f"<p>You {done} {html.escape(action.tool)}.</p>")

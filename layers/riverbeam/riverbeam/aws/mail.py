"""Mail in a deployment: the notifier (MailNotifierFunction, fed by the table's stream as the events
function is: a mail SES does not take fails its record alone, which is delivered again) and the links'
routes (MailFunction, `GET` and `POST /channels/email/{token}`, no JWT: the signed token is their door).
The work is riverbeam.channels.mail's.

MAIL_FROM (a verified SES identity) sends through SES; without it (the local stack) each mail is written
under the data dir, `mail/<action>-<user>.eml`, and its links are logged. The links' key:
RIVERBEAM_MAIL_KEY, else the Secrets Manager secret MAIL_KEY_SECRET, else one made and kept in the data dir
(`mail.key`). MAIL_LINK_BASE is the API's URL the links start with."""

from __future__ import annotations

import base64
import functools
import html
import os
import secrets
import urllib.parse
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import boto3
from aws_lambda_powertools.utilities.typing import LambdaContext
from beam_store.dynamo.outbox_items import events_of

from ..channels import mail, store_of
from ..errors import BeamError
from ..models import AuthContext
from . import runtime, service
from .slack import agents_file, outbox_of, secrets_provider, stream_batch


@functools.cache
def key() -> str:
    given = os.environ.get("RIVERBEAM_MAIL_KEY")
    if given:
        return given
    secret_id = os.environ.get("MAIL_KEY_SECRET")
    if secret_id:
        return str(secrets_provider().get(secret_id, max_age=300))
    kept = Path(runtime.settings().data_dir) / "mail.key"
    if not kept.exists():  # the local stack's own, made once
        kept.parent.mkdir(parents=True, exist_ok=True)
        kept.write_text(secrets.token_hex(32), encoding="utf-8")
        kept.chmod(0o600)
    return kept.read_text(encoding="utf-8").strip()


def send(mail: EmailMessage) -> None:
    sender = os.environ.get("MAIL_FROM", "")
    if sender:
        mail["From"] = sender
        boto3.client("sesv2").send_email(FromEmailAddress=sender, Content={"Raw": {"Data": mail.as_bytes()}})
        return
    mail["From"] = "riverbeam@localhost"
    folder = Path(runtime.settings().data_dir) / "mail"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{len(list(folder.glob('*.eml'))) + 1:04d}.eml"
    path.write_bytes(mail.as_bytes())
    # the links whole, one a line on stdout (a log line would clip them): the local stack's way to open them
    print(f"Mail to {mail['To']}: {path}", flush=True)
    for line in mail.get_content().splitlines():
        if "/channels/email/" in line:
            print(f"  {line}", flush=True)


def _notifier() -> Any:
    def notify(record: Any) -> None:
        image = outbox_of(record)
        if image is None:
            return
        base = os.environ.get("MAIL_LINK_BASE", "")
        for event in events_of(image):
            mail.on_event(store_of(runtime.beam()), agents_file(), key(), base, send, event.detail)

    return notify


def handle_stream(event: dict[str, Any], context: LambdaContext | None) -> dict[str, Any]:
    """The mail notifier: a batch of stream records; the answer names those whose mail was not sent."""
    if not any(a.notify and a.notify.email for a in agents_file().agents.values()) and not any(
        s.notify and s.notify.email for a in agents_file().agents.values() for s in a.tool_settings.values()
    ):
        return {"batchItemFailures": []}  # no tool of the file sends mail
    return stream_batch(event, _notifier(), context)


def _resume(body: dict[str, Any], caller: AuthContext) -> Any:
    return service.resume(body, lambda _: caller)


def handle_link(event: dict[str, Any]) -> dict[str, Any]:
    """GET shows the confirmation page (and decides nothing); POST decides, once."""
    given = str((event.get("pathParameters") or {}).get("token", ""))
    method = str(event.get("requestContext", {}).get("http", {}).get("method", "GET"))
    store = store_of(runtime.beam())
    try:
        if method != "POST":
            return mail.confirmation(store, key(), given)
        raw = event.get("body") or ""
        body = base64.b64decode(raw).decode() if event.get("isBase64Encoded") else raw
        reason = (urllib.parse.parse_qs(body).get("reason") or [""])[0][:2000]
        return mail.decide(store, key(), given, agents_file().people, _resume, reason)
    except BeamError as error:
        runtime.logger.info("mail link refused", extra={"code": error.code})
        title = "This link cannot be used" if error.status == 401 else "Not taken"
        return mail.page(title, f"<p>{error.code}: {html.escape(error.message)}</p>", error.status)

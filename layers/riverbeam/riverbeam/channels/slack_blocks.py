"""The Slack message of an approval, as Block Kit (slack_sdk's models): a view over the action's record,
built again on every change (asked, a vote, decided, expired), so that any update shows the whole state.

Whatever the agent or a person wrote (the tool's args, the agent's last words, names, reasons) goes only into
`plain_text` objects and a `rich_text_preformatted` element, which Slack never renders as markup nor as a
mention (`<!channel>`, `<@U1>`, links); the message's fallback `text` (notifications) is escaped as Slack
asks (&, <, >). Buttons are there while the action is pending, and only then.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from beam_store import Action
from slack_sdk.models.blocks import (
    ActionsBlock,
    Block,
    ButtonElement,
    ContextBlock,
    HeaderBlock,
    InputBlock,
    PlainTextInputElement,
    PlainTextObject,
    RichTextBlock,
    RichTextElementParts,
    RichTextPreformattedElement,
    SectionBlock,
)
from slack_sdk.models.views import View

APPROVE = "riverbeam_approve"
REJECT = "riverbeam_reject"
REJECT_VIEW = "riverbeam_reject_reason"
REASON_BLOCK = "reason"
REASON_INPUT = "reason"
# Slack's limits: a plain_text 3000 characters, a header 150, a rich text element's text some 4000
TEXT_LIMIT = 2900
HEADER_LIMIT = 140
ARGS_LIMIT = 3500
REASON_LIMIT = 2000


def escaped(text: str) -> str:
    """Text as Slack's `text` fields need it: &, < and > as entities (never a mention, a link, a command)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _clipped(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _plain(text: str, limit: int = TEXT_LIMIT) -> PlainTextObject:
    return PlainTextObject(text=_clipped(text, limit) or " ", emoji=False)


def _time_left(expires_at: str | None, now: datetime) -> str:
    if expires_at is None:
        return "no time limit"
    left = datetime.fromisoformat(expires_at) - now
    minutes = int(left.total_seconds() // 60)
    if minutes < 0:
        return f"past its time ({expires_at})"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min left (until {expires_at})" if hours else f"{minutes} min left"


def _votes(action: Action) -> str:
    required = action.approvals.required if action.approvals is not None else 1
    approvals = [v.user_id for v in action.votes if v.status == "submitted"]
    named = f": {', '.join(approvals)}" if approvals else ""
    return f"{len(approvals)} of {required} approvals{named}"


def _outcome(action: Action) -> str:
    response = action.response
    if action.status == "pending":
        return "Waiting for a decision"
    if action.status == "expired":
        return "Expired: nobody answered in time"
    who = response.who if response is not None else "?"
    verb = "Approved" if response is not None and response.status == "submitted" else "Rejected"
    reason = f": {response.reason}" if response is not None and response.reason else ""
    return f"{verb} by {who}{_clipped(reason, REASON_LIMIT)}"


def message_blocks(action: Action, last_words: str | None, now: datetime | None = None) -> list[Block]:
    """The message's blocks for the action as it stands."""
    now = now or datetime.now(UTC)
    args = json.dumps(action.args, ensure_ascii=False, indent=2, sort_keys=True)
    blocks: list[Block] = [
        HeaderBlock(text=_plain(f"Approve {action.tool}?", HEADER_LIMIT), block_id="riverbeam_header"),
        SectionBlock(
            block_id="riverbeam_facts",
            fields=[
                _plain(f"Tool: {action.tool}"),
                _plain(f"Asked by: {action.user_id} (agent {action.agent_name})"),
                _plain(_time_left(action.expires_at, now) if action.status == "pending" else action.status),
                _plain(_votes(action)),
            ],
        ),
        RichTextBlock(
            block_id="riverbeam_args",
            elements=[
                RichTextPreformattedElement(
                    elements=[RichTextElementParts.Text(text=_clipped(args, ARGS_LIMIT))]
                )
            ],
        ),
        ContextBlock(block_id="riverbeam_hash", elements=[_plain(f"args sha256 {action.args_sha256}")]),
    ]
    if last_words:
        blocks.append(SectionBlock(block_id="riverbeam_words", text=_plain(f"The agent: {last_words}")))
    blocks.append(SectionBlock(block_id="riverbeam_state", text=_plain(_outcome(action))))
    if action.status == "pending":
        blocks.append(_buttons(action.action_id))
    return blocks


def _buttons(action_id: str) -> ActionsBlock:
    return ActionsBlock(
        block_id=f"riverbeam_decide_{action_id}",
        elements=[
            ButtonElement(text=_plain("Approve"), action_id=APPROVE, value=action_id, style="primary"),
            ButtonElement(text=_plain("Reject"), action_id=REJECT, value=action_id, style="danger"),
        ],
    )


def fallback_text(action: Action) -> str:
    """The message's `text` (notifications, screen readers): escaped, it mentions nobody."""
    state = "approval needed" if action.status == "pending" else action.status
    return escaped(f"{action.tool}: {state} (asked by {action.user_id})")


def message(action: Action, last_words: str | None, now: datetime | None = None) -> dict[str, Any]:
    """chat.postMessage's and chat.update's arguments, less the channel (and ts)."""
    return {
        "text": fallback_text(action),
        "blocks": [b.to_dict() for b in message_blocks(action, last_words, now)],
    }


def reject_view(action_id: str, channel: str, ts: str) -> dict[str, Any]:
    """The modal Reject opens: the reason, then the rejection (`private_metadata` names the action)."""
    view = View(
        type="modal",
        callback_id=REJECT_VIEW,
        title=_plain("Reject", 24),
        submit=_plain("Reject", 24),
        close=_plain("Cancel", 24),
        private_metadata=json.dumps({"action_id": action_id, "channel": channel, "ts": ts}),
        blocks=[
            InputBlock(
                block_id=REASON_BLOCK,
                label=_plain("Why?"),
                element=PlainTextInputElement(
                    action_id=REASON_INPUT, multiline=True, max_length=REASON_LIMIT
                ),
            )
        ],
    )
    return view.to_dict()

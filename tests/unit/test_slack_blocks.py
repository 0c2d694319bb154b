"""The Slack message of an approval (riverbeam.channels.slack_blocks): what it shows, that nothing anyone
wrote is read as markup or a mention, and buttons only while the action is pending."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from beam_store.records import Action, ActionResponseRecord, Approvals, Vote
from riverbeam.channels import slack_blocks

NOW = datetime(2026, 12, 8, 1, 0, tzinfo=UTC)
HOSTILE = "<!channel> *bold* <@U0ALL> ```x``` <https://evil.example|click> &amp;"


def action(**changes: Any) -> Action:
    fields: dict[str, Any] = {
        "action_id": "11111111-1111-4111-8111-111111111111",
        "session_id": "s",
        "interaction_id": "i",
        "run_id": "r",
        "user_id": "u1 <!here>",
        "agent_name": "author",
        "tool": "git_push",
        "args": {"ref": HOSTILE},
        "status": "pending",
        "expires_at": (NOW + timedelta(minutes=90)).isoformat(),
        "approvals": Approvals(groups=("ops",), required=2, self_approval=False),
        "created_at": NOW.isoformat(),
        "updated_at": NOW.isoformat(),
    }
    return Action(**(fields | changes))


def texts(value: Any, kind: str) -> list[str]:
    if isinstance(value, dict):
        here = [value["text"]] if value.get("type") == kind and isinstance(value.get("text"), str) else []
        return here + [t for v in value.values() for t in texts(v, kind)]
    if isinstance(value, list):
        return [t for v in value for t in texts(v, kind)]
    return []


def by_id(shown: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {b["block_id"]: b for b in shown["blocks"]}


def test_the_message_shows_the_tool_args_hash_asker_time_left_votes_and_last_words() -> None:
    asked = action(votes=[Vote(user_id="ana", status="submitted", at=NOW.isoformat())])
    shown = slack_blocks.message(asked, "I will push it <!channel>.", NOW)
    blocks = by_id(shown)
    plain = " | ".join(texts(shown, "plain_text"))
    assert "Tool: git_push" in plain and "Asked by: u1 <!here> (agent author)" in plain
    assert "1 h 30 min left" in plain and "1 of 2 approvals: ana" in plain
    assert "The agent: I will push it <!channel>." in plain
    assert f"args sha256 {asked.args_sha256}" in plain and len(asked.args_sha256) == 64
    args = blocks["riverbeam_args"]["elements"][0]
    assert args["type"] == "rich_text_preformatted"
    assert json.loads(args["elements"][0]["text"]) == {"ref": HOSTILE}
    buttons = blocks[f"riverbeam_decide_{asked.action_id}"]["elements"]
    assert [(b["action_id"], b["value"], b["style"]) for b in buttons] == [
        ("riverbeam_approve", asked.action_id, "primary"),
        ("riverbeam_reject", asked.action_id, "danger"),
    ]


def test_nothing_anyone_wrote_is_markup_or_a_mention() -> None:
    shown = slack_blocks.message(action(), HOSTILE, NOW)
    assert texts(shown, "mrkdwn") == []  # plain_text and preformatted rich text only
    assert all(o.get("emoji") is False for o in _objects(shown) if o.get("type") == "plain_text")
    assert "<" not in shown["text"] and ">" not in shown["text"]
    assert shown["text"] == "git_push: approval needed (asked by u1 &lt;!here&gt;)"
    assert slack_blocks.escaped("a & <b> c") == "a &amp; &lt;b&gt; c"


def _objects(value: Any) -> list[dict[str, Any]]:
    if isinstance(value, dict):
        return [value] + [o for v in value.values() for o in _objects(v)]
    if isinstance(value, list):
        return [o for v in value for o in _objects(v)]
    return []


def test_a_decided_or_expired_action_has_no_buttons_and_says_what_became_of_it() -> None:
    approved = action(
        status="resolved",
        response=ActionResponseRecord(status="submitted", request_id="q", who="bo", when=NOW.isoformat()),
    )
    rejected = action(
        status="cancelled",
        response=ActionResponseRecord(
            status="cancelled", request_id="q", who="ana", when=NOW.isoformat(), reason="not on Friday"
        ),
    )
    for done, says in (
        (approved, "Approved by bo"),
        (rejected, "Rejected by ana: not on Friday"),
        (action(status="expired"), "Expired: nobody answered in time"),
    ):
        shown = slack_blocks.message(done, None, NOW)
        assert not any(b["block_id"].startswith("riverbeam_decide") for b in shown["blocks"])
        assert by_id(shown)["riverbeam_state"]["text"]["text"] == says


def test_long_args_and_words_are_clipped_to_slacks_limits() -> None:
    shown = slack_blocks.message(action(args={"blob": "x" * 20_000}), "w" * 10_000, NOW)
    args = by_id(shown)["riverbeam_args"]["elements"][0]["elements"][0]["text"]
    assert len(args) <= slack_blocks.ARGS_LIMIT and args.endswith("…")
    assert all(len(t) <= 3000 for t in texts(shown, "plain_text"))


def test_reject_opens_a_modal_that_asks_the_reason_and_names_the_action() -> None:
    view = slack_blocks.reject_view("a1", "C1", "1.2")
    assert view["type"] == "modal" and view["callback_id"] == slack_blocks.REJECT_VIEW
    assert json.loads(view["private_metadata"]) == {"action_id": "a1", "channel": "C1", "ts": "1.2"}
    (reason,) = view["blocks"]
    assert (reason["block_id"], reason["element"]["action_id"]) == ("reason", "reason")
    assert reason["element"]["multiline"] is True

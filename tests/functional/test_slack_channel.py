"""The Slack channel in process, on every store: the signature checked first (forged, stale, tampered,
replayed: 401 with a code of its own), the message posted once whatever the events' deliveries, Slack down
losing nothing, and a click answered as the mapped person through the same resume."""

from __future__ import annotations

import time
from typing import Any

import pytest
from beam_store import BeamStore
from riverbeam import BeamError, RiverBeam
from riverbeam.agent.channels_config import Person
from riverbeam.agent.config import AgentsFile
from riverbeam.channels import records, slack_interact, slack_notify
from riverbeam.models import AuthContext
from slack_sdk.errors import SlackApiError

from tests.support.agents import author_beam, invoke_body
from tests.support.fake_slack import SIGNING_SECRET, click, signed


class Recorder:
    """A WebClient's methods the channel calls, recorded; `down` makes each raise as Slack down would."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.down = False
        self.refusing: str | None = None  # Slack's error code for every call (`ok: false`)

    def _call(self, name: str, kwargs: dict[str, Any]) -> dict[str, Any]:
        if self.down:
            raise ConnectionError("slack is down")
        if self.refusing is not None:
            raise SlackApiError("refused", {"ok": False, "error": self.refusing})
        self.calls.append((name, kwargs))
        return {"ok": True, "channel": "C0APPROVALS", "ts": kwargs.get("ts") or f"1.{len(self.calls)}"}

    def chat_postMessage(self, **kwargs: Any) -> dict[str, Any]:
        return self._call("chat.postMessage", kwargs)

    def chat_update(self, **kwargs: Any) -> dict[str, Any]:
        return self._call("chat.update", kwargs)

    def chat_postEphemeral(self, **kwargs: Any) -> dict[str, Any]:
        return self._call("chat.postEphemeral", kwargs)

    def views_open(self, **kwargs: Any) -> dict[str, Any]:
        return self._call("views.open", kwargs)

    def named(self, name: str) -> list[dict[str, Any]]:
        return [kwargs for called, kwargs in self.calls if called == name]


# agents.yaml as the notifier reads it: the author's tools notify #approvals
Config = AgentsFile.model_validate(
    {"agents": {"author": {"tools": ["git_push"], "notify": {"slack": {"channel": "#approvals"}}}}}
)


PEOPLE = {"ana": Person(slack="UANA"), "u1": Person(slack="UU1")}


def check(store: BeamStore, body: bytes, headers: dict[str, str], **kwargs: Any) -> None:
    lowered = {k.lower(): v for k, v in headers.items()}
    slack_interact.check_signature(store, SIGNING_SECRET, body, lowered, **kwargs)


def code_of(store: BeamStore, body: bytes, headers: dict[str, str], **kwargs: Any) -> tuple[int, str]:
    with pytest.raises(BeamError) as refused:
        check(store, body, headers, **kwargs)
    return refused.value.status, refused.value.code


def test_the_signature_is_checked_first_and_a_replay_is_refused_within_its_window(store: BeamStore) -> None:
    body, headers = signed(click("a1", "UANA"))
    assert code_of(store, body, headers | {"X-Slack-Signature": "v0=" + "0" * 64}) == (401, "BEM-095")
    assert code_of(store, body + b"x", headers) == (401, "BEM-095")  # tampered
    assert code_of(store, body, {"X-Slack-Request-Timestamp": headers["X-Slack-Request-Timestamp"]}) == (
        401,
        "BEM-095",
    )
    stale, stale_headers = signed(click("a1", "UANA"), timestamp=int(time.time()) - 301)
    assert code_of(store, stale, stale_headers) == (401, "BEM-096")
    assert code_of(store, body, headers, now=time.time() + 400) == (401, "BEM-096")  # its window is over
    check(store, body, headers)  # the first time: taken
    assert code_of(store, body, headers) == (401, "BEM-097")  # the same signature again


def test_an_actions_message_is_claimed_posted_once_and_found_again(store: BeamStore) -> None:
    claim = records.claim_post(store, "a1")
    assert claim.claim_id is not None
    with pytest.raises(RuntimeError):
        records.claim_post(store, "a1")  # another is posting it now: the event comes again later
    records.release_post(store, "a1", claim.claim_id)  # the post failed: a retry starts afresh
    claim = records.claim_post(store, "a1")
    assert claim.claim_id is not None and records.posted(store, "a1") is None
    records.keep_post(store, "a1", claim.claim_id, "C1", "1.5")
    again = records.claim_post(store, "a1")
    assert (again.claim_id, again.channel, again.ts) == (None, "C1", "1.5")
    assert records.posted(store, "a1") == ("C1", "1.5")


def asked(store: BeamStore) -> tuple[RiverBeam, Any]:
    beam, _ = author_beam(store)
    result = beam.invoke(invoke_body(user="u1"))
    return beam, result.action_required[0]


def test_slack_down_delays_the_message_and_every_delivery_after_it_posts_once(store: BeamStore) -> None:
    _, action = asked(store)
    slack = Recorder()
    slack.down = True
    detail = {"action_id": action.action_id}
    with pytest.raises(ConnectionError):
        slack_notify.on_event(store, slack, Config, detail)  # type: ignore[arg-type]
    assert slack.calls == [] and records.posted(store, action.action_id) is None
    slack.down = False
    assert slack_notify.on_event(store, slack, Config, detail) == "posted"  # type: ignore[arg-type]
    assert slack_notify.on_event(store, slack, Config, detail) == "updated"  # type: ignore[arg-type]
    (posted,) = slack.named("chat.postMessage")
    assert posted["channel"] == "#approvals" and posted["link_names"] is False
    assert "I will push." in str(posted["blocks"])  # the agent's last words
    assert slack.named("chat.update")[0]["ts"] == "1.1"


def test_a_click_is_answered_as_the_mapped_person_and_refusals_are_told_to_them_alone(
    store: BeamStore,
) -> None:
    beam, action = asked(store)
    slack = Recorder()
    slack_notify.on_event(store, slack, Config, {"action_id": action.action_id})  # type: ignore[arg-type]

    def resume(body: dict[str, Any], caller: AuthContext) -> Any:
        return beam.resume(body | {"auth_context": caller.model_dump()})

    answering = slack_interact.Interaction(store, slack, PEOPLE, resume)  # type: ignore[arg-type]
    answering.handle(click(action.action_id, "UNOBODY"))
    (told,) = slack.named("chat.postEphemeral")
    assert told["user"] == "UNOBODY" and "BEM-098" in told["text"]
    assert store.get_action(action.action_id).status == "pending"  # type: ignore[union-attr]
    answering.handle(click(action.action_id, "UU1"))  # the owner: the default approver
    found = store.get_action(action.action_id)
    assert found is not None and found.status == "resolved" and found.response is not None
    assert found.response.who == "u1"
    update = slack.named("chat.update")[-1]
    assert "Approved by u1" in str(update["blocks"]) and "riverbeam_decide" not in str(update["blocks"])
    answering.handle(click(action.action_id, "UU1", "riverbeam_reject"))
    assert slack.named("views.open")  # the modal opens; its submission would be refused (BEM-066)


def test_a_refusal_no_retry_changes_is_passed_over_and_any_other_is_delivered_again(store: BeamStore) -> None:
    _, action = asked(store)
    slack = Recorder()
    detail = {"action_id": action.action_id}
    slack.refusing = "channel_not_found"  # the bot was never invited: retrying changes nothing
    assert slack_notify.on_event(store, slack, Config, detail) == "refused: channel_not_found"  # type: ignore[arg-type]
    slack.refusing = "ratelimited"
    with pytest.raises(SlackApiError):
        slack_notify.on_event(store, slack, Config, detail)  # type: ignore[arg-type]
    slack.refusing = None
    assert slack_notify.on_event(store, slack, Config, detail) == "posted"  # type: ignore[arg-type]

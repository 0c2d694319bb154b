"""Approvals by mail in process, on every store: the mail sent once whatever the deliveries, the links'
tokens refused when forged, tampered, expired or reused (401 BEM-099), a GET that decides nothing and a
POST that decides as the person the address maps to."""

from __future__ import annotations

import time
from email.message import EmailMessage
from typing import Any

import jwt
import pytest
from beam_store import BeamStore
from riverbeam import BeamError
from riverbeam.agent.config import AgentsFile
from riverbeam.channels import mail
from riverbeam.models import AuthContext

from tests.support.agents import author_beam, invoke_body

KEY = "k" * 64
CONFIG = AgentsFile.model_validate(
    {
        "people": {"u1": {"email": "u1@example.com"}},
        "agents": {"author": {"tools": ["git_push"], "notify": {"email": {"to": ["U1@example.com"]}}}},
    }
)


def links_of(sent: list[EmailMessage]) -> dict[str, str]:
    lines = [line.split(": ", 1) for line in sent[0].get_content().splitlines() if "/channels/email/" in line]
    return {verb: url.rsplit("/", 1)[1] for verb, url in lines}


def test_a_mail_is_sent_once_and_its_links_decide_once_by_post_only(store: BeamStore) -> None:
    beam, _ = author_beam(store)
    action = beam.invoke(invoke_body(user="u1")).action_required[0]
    sent: list[EmailMessage] = []
    detail = {"action_id": action.action_id, "status": "pending"}
    assert mail.on_event(store, CONFIG, KEY, "http://h", sent.append, detail) == 1
    assert mail.on_event(store, CONFIG, KEY, "http://h", sent.append, detail) == 0  # delivered again
    assert [m["To"] for m in sent] == ["U1@example.com"]
    tokens = links_of(sent)

    page = mail.confirmation(store, KEY, tokens["Approve"])
    assert page["statusCode"] == 200 and "text/html" in page["headers"]["Content-Type"]
    assert store.get_action(action.action_id).status == "pending"  # type: ignore[union-attr]

    def resume(body: dict[str, Any], caller: AuthContext) -> Any:
        return beam.resume(body | {"auth_context": caller.model_dump()})

    def refused(given: str) -> str:
        with pytest.raises(BeamError) as error:
            mail.decide(store, KEY, given, CONFIG.people, resume, None)
        assert error.value.status == 401
        return error.value.code + ": " + error.value.message

    assert refused(tokens["Approve"][:-3] + "abc").startswith("BEM-099")  # tampered
    assert refused(jwt.encode({"act": action.action_id}, KEY, algorithm="HS256")).startswith("BEM-099")
    claims = jwt.decode(tokens["Approve"], KEY, algorithms=["HS256"])
    expired = jwt.encode(claims | {"exp": int(time.time()) - 10}, KEY, algorithm="HS256")
    assert "expired" in refused(expired)
    assert refused(
        jwt.encode(claims, "another key, as long as ours: " + "x" * 40, algorithm="HS256")
    ).startswith("BEM-099")
    assert store.get_action(action.action_id).status == "pending"  # type: ignore[union-attr]

    done = mail.decide(store, KEY, tokens["Approve"], CONFIG.people, resume, None)
    assert done["statusCode"] == 200
    found = store.get_action(action.action_id)
    assert found is not None and found.status == "resolved" and found.response is not None
    assert found.response.who == "u1"
    assert "used before" in refused(tokens["Approve"])

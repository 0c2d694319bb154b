"""The local stack's door with `--auth jwt` (CONTRACT 18): a bearer token, checked as the HTTP API's JWT
authorizer checks it, replaces the secret; its claims reach the app; a token refused is 401 BEM-030 with the
reason; a WebSocket goes on to `$connect` (whose function checks its token); `/login.json` needs nothing."""

from __future__ import annotations

import asyncio
from typing import Any

from riverbeam.errors import BeamError
from riverbeam_local.lambda_like import authorizer_claims
from riverbeam_local.stack.door import CLAIMS_KEY, Door

from tests.unit.test_door import PORT, SECRET, App, Message, answer, scope

CLAIMS = {"sub": "6f1c", "cognito:username": "ana", "cognito:groups": ["ops", "dev"], "exp": 1767225600}


def verifier(token: str) -> dict[str, Any]:
    if token == "good.token.here":
        return dict(CLAIMS)
    raise BeamError("BEM-030", "the token has expired", field="token")


def knock(request: dict[str, Any]) -> tuple[App, list[Message]]:
    app, sent = App(), []

    async def receive() -> Message:
        return {"type": "websocket.connect"} if request["type"] == "websocket" else {"type": "http.request"}

    async def send(message: Message) -> None:
        sent.append(message)

    asyncio.run(Door(app, PORT, SECRET, verifier=verifier)(request, receive, send))
    return app, sent


def test_a_valid_token_passes_with_its_claims() -> None:
    app, sent = knock(scope(headers={"authorization": "Bearer good.token.here"}))
    assert answer(sent)[0] == 200
    (seen,) = app.scopes
    assert seen[CLAIMS_KEY] == CLAIMS


def test_the_secret_is_no_token() -> None:
    app, sent = knock(scope())  # the stack's own secret, as a client of AuthMode none sends it
    status, headers, body = answer(sent)
    assert (status, body["error"]["code"]) == (401, "BEM-030") and app.scopes == []
    assert "www-authenticate" in headers


def test_a_refused_token_says_why_and_a_missing_one_what_to_send() -> None:
    app, sent = knock(scope(headers={"authorization": "Bearer expired.token.here"}))
    status, _, body = answer(sent)
    assert (status, body["error"]["code"], body["error"]["message"]) == (
        401,
        "BEM-030",
        "the token has expired",
    )
    app, sent = knock(scope(headers={"authorization": None}))
    status, _, body = answer(sent)
    assert status == 401 and "riverbeam login" in body["error"]["message"] and app.scopes == []


def test_the_login_document_and_a_websocket_need_no_token() -> None:
    app, sent = knock(scope(path="/login.json", headers={"authorization": None}))
    assert answer(sent)[0] == 200 and CLAIMS_KEY not in app.scopes[0]
    app, sent = knock(scope("websocket", path="/ws", query=b"session_id=s&token=anything"))
    assert sent == [{"type": "websocket.accept"}]
    assert b"token=anything" in app.scopes[0]["query_string"]  # for $connect's function to check


def test_a_foreign_host_is_refused_before_any_token_is_read() -> None:
    app, sent = knock(scope(headers={"host": "evil.example", "authorization": "Bearer good.token.here"}))
    status, _, body = answer(sent)
    assert (status, body["error"]["code"]) == (403, "BEM-034") and app.scopes == []


def test_claims_reach_the_function_as_the_authorizer_passes_them() -> None:
    assert authorizer_claims(CLAIMS) == {
        "sub": "6f1c",
        "cognito:username": "ana",
        "cognito:groups": "[ops dev]",
        "exp": "1767225600",
    }

"""AuthMode jwt: the HTTP routes trust the authorizer's claims only, and `$connect` checks the `token`
query against the issuer's keys (served here by a JWKS server on 127.0.0.1)."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from riverbeam.aws import runtime

from tests.support.lambda_stack import Stack, http_event, lambda_stack, ws_event

AUDIENCE = "riverbeam-client"


def _key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


SIGNING_KEY, STRANGER_KEY = _key(), _key()


@pytest.fixture(scope="module")
def issuer() -> Iterator[str]:
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(SIGNING_KEY.public_key()))
    keys = json.dumps({"keys": [{**jwk, "kid": "k1", "use": "sig", "alg": "RS256"}]}).encode()

    class Keys(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            found = self.path == "/.well-known/jwks.json"
            self.send_response(200 if found else 404)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(keys if found else b"{}")

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Keys)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.fixture
def stack(tmp_path: Path, issuer: str) -> Iterator[Stack]:
    with lambda_stack(tmp_path, auth_mode="jwt", JWT_ISSUER=issuer, JWT_AUDIENCE=AUDIENCE) as s:
        yield s


def token(issuer: str, sub: str = "u1", *, key: Any = SIGNING_KEY, **claims: Any) -> str:
    body = {"sub": sub, "iss": issuer, "client_id": AUDIENCE, "exp": int(time.time()) + 600, **claims}
    return jwt.encode(body, key, algorithm="RS256", headers={"kid": "k1"})


def connect(stack: Stack, session_id: str, **query: str) -> dict[str, Any]:
    e = ws_event(
        "connections/connect", connection_id=f"c-{uuid.uuid4().hex[:8]}=", session_id=session_id, **query
    )
    e["queryStringParameters"] = {"session_id": session_id, **query}
    return stack.call("connections", e)


def test_connect_checks_the_token(stack: Stack, issuer: str) -> None:
    session_id = str(uuid.uuid4())
    assert connect(stack, session_id, token=token(issuer))["statusCode"] == 200
    session = runtime.beam().store.get_session(session_id)
    assert session is not None and session.user_id == "u1"
    refused = {
        "expired": token(issuer, exp=int(time.time()) - 60),
        "signed by another key": token(issuer, key=STRANGER_KEY),
        "another issuer": token(issuer, iss="https://elsewhere.example"),
        "another audience": token(issuer, client_id="another-app"),
        "not a JWT": "abc.def.ghi",
    }
    for why, bad in refused.items():
        answer = connect(stack, session_id, token=bad)
        assert answer["statusCode"] == 401, why
        assert json.loads(answer["body"])["error"]["code"] == "BEM-030", why
    # the user_id query is trusted only with AuthMode none
    answer = connect(stack, session_id, user_id="u1")
    assert answer["statusCode"] == 401
    other = connect(stack, session_id, token=token(issuer, "u2"))
    assert other["statusCode"] == 403 and json.loads(other["body"])["error"]["code"] == "BEM-031"


def test_http_routes_trust_the_claims_not_the_body(stack: Stack) -> None:
    session_id = str(uuid.uuid4())
    body = {
        "agent_name": "author",
        "session_id": session_id,
        "content": [{"type": "text", "text": "Hello"}],
        "auth_context": {"user_id": "mallory"},
    }
    answer = stack.call("invoke", http_event("invoke/http", body=body, sub="u1"))
    assert answer["statusCode"] == 200
    session = runtime.beam().store.get_session(session_id)
    assert session is not None and session.user_id == "u1"
    without = {k: v for k, v in body.items() if k != "auth_context"}
    assert stack.call("invoke", http_event("invoke/http", body=without, sub="u1"))["statusCode"] == 200
    assert stack.call("invoke", http_event("invoke/http", body=without, sub="u2"))["statusCode"] == 403

    path = f"/sessions/{session_id}"
    mine = stack.call("records", http_event("records/session", path=path, sub="u1"))
    assert mine["statusCode"] == 200
    # a user_id query does not make anyone else the owner
    theirs = stack.call(
        "records", http_event("records/session", path=path, sub="u2", query={"user_id": "u1"})
    )
    assert theirs["statusCode"] == 404 and json.loads(theirs["body"])["error"]["code"] == "BEM-020"
    anonymous = stack.call("records", http_event("records/session", path=path, sub=None))
    assert anonymous["statusCode"] == 401

"""AuthMode jwt: the HTTP routes trust the authorizer's claims only, and `$connect` checks the `token`
query against the issuer's keys (served here by JWKS servers on 127.0.0.1): kept for their lifespan,
fetched again for an unknown `kid` at most once per window, and an issuer whose keys cannot be had is a
503 (BEM-032) that tells the caller nothing of the cause."""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from riverbeam.aws import identity, runtime

from tests.support.lambda_stack import Stack, http_event, lambda_stack, ws_event

AUDIENCE = "riverbeam-client"


def _key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


SIGNING_KEY, STRANGER_KEY = _key(), _key()


def jwks(**keys: rsa.RSAPrivateKey) -> bytes:
    """The JWK set of the public halves of `keys`, by kid."""
    found = [
        {
            **json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key())),
            "kid": kid,
            "use": "sig",
            "alg": "RS256",
        }
        for kid, key in keys.items()
    ]
    return json.dumps({"keys": found}).encode()


class KeyServer:
    """A JWKS endpoint on 127.0.0.1 that counts its requests. Every issuer it stands for has a path of its
    own (`issuer()`), so that no test finds the keys another test's issuer left in the container's cache."""

    def __init__(self, body: bytes, status: int = 200) -> None:
        self.body, self.status, self.requests = body, status, 0
        served = self

        class Keys(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                served.requests += 1
                found = self.path.endswith("/.well-known/jwks.json")
                self.send_response(served.status if found else 404)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(served.body if found else b"{}")

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Keys)
        self.port = self._server.server_port
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True
        )
        self._thread.start()
        self._stopped = False

    def issuer(self) -> str:
        return f"http://127.0.0.1:{self.port}/{uuid.uuid4().hex}"

    def stop(self) -> None:
        """Stop serving and close the port: a fetch from it is then refused."""
        if not self._stopped:
            self._stopped = True
            self._server.shutdown()
            self._server.server_close()
            self._thread.join(timeout=30)


@contextmanager
def key_server(body: bytes, status: int = 200) -> Iterator[KeyServer]:
    server = KeyServer(body, status)
    try:
        yield server
    finally:
        server.stop()


@contextmanager
def closed_port() -> Iterator[int]:
    """A port on 127.0.0.1 that refuses connections: bound, so nobody else takes it, but not listening."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as bound:
        bound.bind(("127.0.0.1", 0))
        yield bound.getsockname()[1]


class Clock:
    """The key cache's clock, moved by the tests instead of sleeping."""

    def __init__(self) -> None:
        self.now = float(round(time.monotonic()))  # whole seconds: adding whole seconds stays exact

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    moved = Clock()
    monkeypatch.setattr(identity, "clock", moved)
    return moved


@pytest.fixture(scope="module")
def issuer() -> Iterator[str]:
    with key_server(jwks(k1=SIGNING_KEY)) as server:
        yield server.issuer()


@contextmanager
def jwt_stack(tmp_path: Path, issuer: str) -> Iterator[Stack]:
    with lambda_stack(tmp_path, auth_mode="jwt", JWT_ISSUER=issuer, JWT_AUDIENCE=AUDIENCE) as s:
        yield s


@pytest.fixture
def stack(tmp_path: Path, issuer: str) -> Iterator[Stack]:
    with jwt_stack(tmp_path, issuer) as s:
        yield s


def token(
    issuer: str,
    sub: str = "u1",
    *,
    key: Any = SIGNING_KEY,
    kid: str | None = "k1",
    alg: str = "RS256",
    **claims: Any,
) -> str:
    body = {"sub": sub, "iss": issuer, "client_id": AUDIENCE, "exp": int(time.time()) + 600, **claims}
    return jwt.encode(body, key, algorithm=alg, headers={"kid": kid} if kid else None)


def connect(stack: Stack, session_id: str | None = None, **query: str) -> dict[str, Any]:
    session_id = session_id or str(uuid.uuid4())
    e = ws_event(
        "connections/connect", connection_id=f"c-{uuid.uuid4().hex[:8]}=", session_id=session_id, **query
    )
    e["queryStringParameters"] = {"session_id": session_id, **query}
    return stack.call("connections", e)


def refused(answer: dict[str, Any], status: int, code: str) -> str:
    """The refusal's message, once its status, code and contract JSON are checked."""
    assert answer["statusCode"] == status, answer
    assert answer["headers"]["Content-Type"] == "application/json"
    error = json.loads(answer["body"])["error"]
    assert error["code"] == code and error["request_id"], error
    return str(error["message"])


def test_connect_checks_the_token(stack: Stack, issuer: str) -> None:
    session_id = str(uuid.uuid4())
    assert connect(stack, session_id, token=token(issuer))["statusCode"] == 200
    session = runtime.beam().store.get_session(session_id)
    assert session is not None and session.user_id == "u1"
    bad_tokens = {
        "expired": token(issuer, exp=int(time.time()) - 60),
        "signed by another key": token(issuer, key=STRANGER_KEY),
        "another issuer": token(issuer, iss="https://elsewhere.example"),
        "another audience": token(issuer, client_id="another-app"),
        "no kid": token(issuer, kid=None),
        "an EC algorithm for an RSA key": token(
            issuer, key=ec.generate_private_key(ec.SECP256R1()), alg="ES256"
        ),
        "not a JWT": "abc.def.ghi",
    }
    for why, bad in bad_tokens.items():
        message = refused(connect(stack, session_id, token=bad), 401, "BEM-030")
        assert "127.0.0.1" not in message and "url" not in message, (why, message)
    # the user_id query is trusted only with AuthMode none
    answer = connect(stack, session_id, user_id="u1")
    assert answer["statusCode"] == 401
    other = connect(stack, session_id, token=token(issuer, "u2"))
    assert other["statusCode"] == 403 and json.loads(other["body"])["error"]["code"] == "BEM-031"


LOGGED_CAUSE = "the issuer's signing keys could not be fetched"
LEAKS = ("urlopen", "Errno", "127.0.0.1", "Fail to fetch", "jwks", "HTTP", "JSON", "Expecting")


@pytest.mark.parametrize(
    "outage", ["a closed port", "an HTTP 500", "a body that is no JSON", "a key set without keys"]
)
def test_keys_that_cannot_be_had_are_a_503_that_leaks_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, outage: str
) -> None:
    with closed_port() as port, key_server(jwks(k1=SIGNING_KEY)) as server:
        if outage == "a closed port":
            issuer = f"http://127.0.0.1:{port}"
        else:
            issuer = server.issuer()
            server.status, server.body = {
                "an HTTP 500": (500, b'{"message": "Internal server error"}'),
                "a body that is no JSON": (200, b"<html>Bad gateway</html>"),
                "a key set without keys": (200, b'{"keys": []}'),
            }[outage]
        with jwt_stack(tmp_path, issuer) as stack:
            session_id = str(uuid.uuid4())
            with caplog.at_level(logging.WARNING, logger="riverbeam"):
                message = refused(connect(stack, session_id, token=token(issuer)), 503, "BEM-032")
            for leak in (*LEAKS, issuer, str(port), str(server.port)):
                assert leak not in message, (leak, message)
            # the cause is in the log, for the operator
            causes = [r for r in caplog.records if r.getMessage() == LOGGED_CAUSE]
            assert causes and getattr(causes[0], "jwks_url", "").startswith(issuer), caplog.records
            # nothing was written: the session is not reserved for anyone
            assert runtime.beam().store.get_session(session_id) is None
            # the next token is answered at once, without waiting on the key server again
            requests = server.requests
            refused(connect(stack, session_id, token=token(issuer)), 503, "BEM-032")
            assert server.requests == requests


def test_the_key_server_is_tried_again_after_a_failure(tmp_path: Path, clock: Clock) -> None:
    with key_server(b"{}", status=500) as server, jwt_stack(tmp_path, issuer := server.issuer()) as stack:
        refused(connect(stack, token=token(issuer)), 503, "BEM-032")
        server.status, server.body = 200, jwks(k1=SIGNING_KEY)
        refused(connect(stack, token=token(issuer)), 503, "BEM-032")
        assert server.requests == 1
        clock.advance(identity.RETRY_SECONDS)
        assert connect(stack, token=token(issuer))["statusCode"] == 200
        assert server.requests == 2


def test_the_keys_are_kept_for_their_lifespan_and_outlive_an_outage(tmp_path: Path, clock: Clock) -> None:
    with key_server(jwks(k1=SIGNING_KEY)) as server, jwt_stack(tmp_path, issuer := server.issuer()) as stack:
        assert connect(stack, token=token(issuer))["statusCode"] == 200
        assert connect(stack, token=token(issuer, "u2"))["statusCode"] == 200
        assert server.requests == 1
        # the issuer replaces k1 by k2: a warm container accepts k1 until the set's lifespan has passed
        server.body = jwks(k2=STRANGER_KEY)
        clock.advance(identity.KEYS_LIFESPAN_SECONDS - 1)
        assert connect(stack, token=token(issuer))["statusCode"] == 200
        assert server.requests == 1
        clock.advance(1)
        refused(connect(stack, token=token(issuer)), 401, "BEM-030")
        assert server.requests == 2
        assert connect(stack, token=token(issuer, key=STRANGER_KEY, kid="k2"))["statusCode"] == 200

        # the key server goes down: the keys fetched are still used, past their lifespan too
        server.stop()
        assert connect(stack, token=token(issuer, key=STRANGER_KEY, kid="k2"))["statusCode"] == 200
        clock.advance(identity.KEYS_LIFESPAN_SECONDS)
        assert connect(stack, token=token(issuer, key=STRANGER_KEY, kid="k2"))["statusCode"] == 200
        # a kid they lack may be a key published since: that cannot be told now
        refused(connect(stack, token=token(issuer, kid="k3")), 503, "BEM-032")
        # and a set fetched too long ago is no longer trusted
        clock.advance(identity.STALE_SECONDS)
        refused(connect(stack, token=token(issuer, key=STRANGER_KEY, kid="k2")), 503, "BEM-032")


def test_an_unknown_kid_fetches_the_keys_again_at_most_once_per_window(tmp_path: Path, clock: Clock) -> None:
    with key_server(jwks(k1=SIGNING_KEY)) as server, jwt_stack(tmp_path, issuer := server.issuer()) as stack:
        assert connect(stack, token=token(issuer))["statusCode"] == 200
        assert server.requests == 1

        def made_up_kids(count: int) -> None:
            for _ in range(count):
                forged = token(issuer, key=STRANGER_KEY, kid=uuid.uuid4().hex)
                refused(connect(stack, token=forged), 401, "BEM-030")

        # right after a fetch, tokens with made-up kids are refused without fetching again
        made_up_kids(20)
        # and a token without a kid never makes a fetch
        refused(connect(stack, token=token(issuer, kid=None)), 401, "BEM-030")
        assert server.requests == 1
        # the issuer publishes k2: once the window has passed, the first token signed by it fetches the keys
        server.body = jwks(k1=SIGNING_KEY, k2=STRANGER_KEY)
        clock.advance(identity.REFRESH_SECONDS)
        assert connect(stack, token=token(issuer, key=STRANGER_KEY, kid="k2"))["statusCode"] == 200
        assert server.requests == 2
        # a window later, a flood of made-up kids costs one fetch, not one each
        clock.advance(identity.REFRESH_SECONDS)
        made_up_kids(20)
        assert server.requests == 3
        assert connect(stack, token=token(issuer))["statusCode"] == 200
        assert server.requests == 3


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


def test_a_websocket_invoke_decides_with_the_groups_of_the_token_it_connected_with(
    stack: Stack, issuer: str
) -> None:
    session_id, connection_id = str(uuid.uuid4()), f"c-{uuid.uuid4().hex[:8]}="
    e = ws_event("connections/connect", connection_id=connection_id)
    e["queryStringParameters"] = {
        "session_id": session_id,
        "token": token(issuer, **{"cognito:groups": ["interns"]}),
    }
    assert stack.call("connections", e)["statusCode"] == 200
    body = {
        "action": "invoke",
        "agent_name": "author",
        "session_id": session_id,
        "content": [{"type": "text", "text": "Push release/x"}],
        # the body's groups are not the caller's with AuthMode jwt: the token's are
        "auth_context": {"user_id": "u1", "groups": ["releasers"]},
    }
    answer = stack.call("invoke", ws_event("invoke/websocket", connection_id=connection_id, body=body))
    assert answer["statusCode"] == 202, answer
    [record] = stack.receive()
    assert json.loads(record["body"])["job"]["groups"] == ["interns"]

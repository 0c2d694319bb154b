"""The embedded AWS endpoints' door on its own (no server, no network): requests signed by botocore with the
stack's key reach the app; a signed request replayed with another body, signed too long ago, signed for a
service the stack does not embed, or sent to moto's management routes never does."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from botocore.auth import S3SigV4Auth, SigV4Auth
from botocore.awsrequest import AWSRequest
from riverbeam_local.stack.aws_door import signed_only
from riverbeam_local.stack.aws_key import stack_key
from werkzeug.test import Client

HOST = "127.0.0.1:4566"
KEY = stack_key("the-stacks-secret-0123456789abcdef")
NOW = datetime(2026, 12, 7, 12, 0, 0, tzinfo=UTC)
SCAN = b'{"TableName": "riverbeam-local"}'


class App:
    """What the door guards: it records each request that reaches it."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        self.bodies.append(environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0)))
        start_response("200 OK", [("Content-Type", "application/json")])
        return [b"{}"]


def signed(
    method: str,
    path: str,
    body: bytes,
    *,
    service: str = "dynamodb",
    at: datetime = NOW,
    headers: dict[str, str] | None = None,
) -> dict[str, str]:
    """The headers botocore's signer gives a request signed with the stack's key at `at`."""
    request = AWSRequest(method, f"http://{HOST}{path}", data=body, headers=headers or {})
    signer = (S3SigV4Auth if service == "s3" else SigV4Auth)(KEY.credentials(), service, "us-east-1")
    # add_auth signs at the clock's time; the request's own time is what the door checks
    request.context["timestamp"] = at.strftime("%Y%m%dT%H%M%SZ")
    request.headers["X-Amz-Date"] = request.context["timestamp"]
    if service == "s3":  # S3 signs the body's hash as a header
        request.headers["X-Amz-Content-SHA256"] = hashlib.sha256(body).hexdigest()
    canonical = signer.canonical_request(request)
    signature = signer.signature(signer.string_to_sign(request, canonical), request)
    scope = signer.credential_scope(request)
    request.headers["Authorization"] = (
        f"AWS4-HMAC-SHA256 Credential={KEY.access_key_id}/{scope}, "
        f"SignedHeaders={signer.signed_headers(signer.headers_to_sign(request))}, Signature={signature}"
    )
    return dict(request.headers.items())


def send(
    app: App, method: str, path: str, body: bytes, headers: dict[str, str], now: datetime = NOW
) -> tuple[int, bytes]:
    client = Client(signed_only(app, KEY, clock=lambda: now))
    answer = client.open(path, method=method, data=body, headers=headers, base_url=f"http://{HOST}")
    return answer.status_code, answer.get_data()


TARGET = {"Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": "DynamoDB_20120810.Scan"}


def test_a_request_signed_with_the_stacks_key_reaches_the_app() -> None:
    app = App()
    assert send(app, "POST", "/", SCAN, signed("POST", "/", SCAN, headers=TARGET))[0] == 200
    assert app.bodies == [SCAN]  # whole, for moto to read


def test_an_s3_request_with_a_query_and_an_encoded_key_reaches_the_app() -> None:
    app = App()
    path = "/riverbeam-local-content/a%20b/c?list-type=2&prefix=a%20b"
    assert send(app, "GET", path, b"", signed("GET", path, b"", service="s3"))[0] == 200


def test_a_signed_request_replayed_with_another_body_is_refused() -> None:
    app = App()
    headers = signed("POST", "/", SCAN, headers=TARGET)
    status, answer = send(app, "POST", "/", b'{"TableName": "other"}', headers)
    assert (status, json.loads(answer)["__type"]) == (400, "InvalidSignatureException")
    assert app.bodies == []


def test_an_s3_body_that_is_not_what_its_declared_hash_says_is_refused() -> None:
    app = App()
    path = "/riverbeam-local-content/key"
    headers = signed("PUT", path, b"the content", service="s3")
    status, answer = send(app, "PUT", path, b"other content", headers)
    assert status == 403 and b"<Code>XAmzContentSHA256Mismatch</Code>" in answer, answer
    assert app.bodies == []


@pytest.mark.parametrize("off", [timedelta(minutes=16), timedelta(minutes=-16)])
def test_a_request_signed_more_than_15_minutes_away_is_refused(off: timedelta) -> None:
    app = App()
    headers = signed("POST", "/", SCAN, at=NOW + off, headers=TARGET)
    status, answer = send(app, "POST", "/", SCAN, headers)
    assert (status, json.loads(answer)["__type"]) == (400, "InvalidSignatureException")
    assert b"15 minutes" in answer and app.bodies == []


def test_a_request_signed_for_a_service_not_embedded_is_refused() -> None:
    app = App()
    body = b"Action=ListUsers&Version=2010-05-08"
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    status, answer = send(app, "POST", "/", body, signed("POST", "/", body, service="iam", headers=form))
    assert status == 403 and b"<Code>AccessDenied</Code>" in answer, answer
    assert app.bodies == []


@pytest.mark.parametrize(
    "path", ["/moto-api/reset", "/moto-api/data.json", "/MOTO-API/", "/moto-api", "/latest/meta-data/"]
)
def test_motos_routes_are_closed_even_signed(path: str) -> None:
    app = App()
    status, answer = send(app, "POST", path, b"", signed("POST", path, b""))
    assert status == 404 and json.loads(answer)["__type"] == "NotFound"
    assert app.bodies == []


def test_the_key_is_the_secrets_and_shaped_as_aws_keys() -> None:
    assert stack_key("the-stacks-secret-0123456789abcdef") == KEY
    other = stack_key("another-secret-0123456789abcdef")
    assert other.access_key_id != KEY.access_key_id and other.secret_access_key != KEY.secret_access_key
    assert len(KEY.access_key_id) == 20 and len(KEY.secret_access_key) == 40


COGNITO = "AWSCognitoIdentityProviderService"


@pytest.mark.parametrize("operation", ["InitiateAuth", "RespondToAuthChallenge"])
def test_cognitos_sign_in_reaches_the_app_unsigned_as_on_aws(operation: str) -> None:
    app = App()
    body = b'{"AuthFlow": "USER_PASSWORD_AUTH"}'
    headers = {"Content-Type": "application/x-amz-json-1.1", "X-Amz-Target": f"{COGNITO}.{operation}"}
    status, _ = send(app, "POST", "/", body, headers)
    assert status == 200 and app.bodies == [body]


def test_a_pools_public_keys_reach_the_app_unsigned() -> None:
    app = App()
    for path in (
        "/us-east-1_abc123/.well-known/jwks.json",
        "/us-east-1_abc123/.well-known/openid-configuration",
    ):
        status, _ = send(app, "GET", path, b"", {})
        assert status == 200, path
    assert len(app.bodies) == 2


@pytest.mark.parametrize(
    ("method", "path", "target"),
    [
        ("POST", "/", f"{COGNITO}.AdminCreateUser"),  # an administrator's call: signed, or refused
        ("POST", "/", f"{COGNITO}.ListUsers"),
        ("POST", "/", "DynamoDB_20120810.Scan"),
        ("GET", "/us-east-1_abc123/.well-known/jwks.json/../../moto-api", None),
        ("GET", "/riverbeam-local-content/.well-known/jwks.json", None),  # an S3 key, not a pool's
        ("POST", "/us-east-1_abc123/.well-known/jwks.json", None),
    ],
)
def test_nothing_else_goes_unsigned(method: str, path: str, target: str | None) -> None:
    app = App()
    headers = {"Content-Type": "application/x-amz-json-1.1", **({"X-Amz-Target": target} if target else {})}
    status, _ = send(app, method, path, b"{}", headers)
    assert status in (400, 403, 404) and app.bodies == []


def test_an_administrators_cognito_call_signed_with_the_stacks_key_reaches_the_app() -> None:
    app = App()
    headers = {"Content-Type": "application/x-amz-json-1.1", "X-Amz-Target": f"{COGNITO}.AdminCreateUser"}
    body = b'{"UserPoolId": "us-east-1_abc123", "Username": "ana"}'
    status, _ = send(
        app, "POST", "/", body, signed("POST", "/", body, service="cognito-idp", headers=headers)
    )
    assert status == 200 and app.bodies == [body]

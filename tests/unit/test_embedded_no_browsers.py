"""The embedded DynamoDB/SQS server is closed to web pages: moto's app, called in-process through werkzeug's
test client, answers any origin through CORS; behind beam_store.embedded.no_browsers a preflight, a request
with an Origin or another Host is refused and no answer carries CORS headers, while an SDK's request works."""

from __future__ import annotations

import json
from typing import Any

import pytest
from beam_store.embedded import no_browsers
from werkzeug.test import Client

PORT = 4566
HOST = f"127.0.0.1:{PORT}"
LIST_TABLES = {
    "content-type": "application/x-amz-json-1.0",
    "x-amz-target": "DynamoDB_20120810.ListTables",
    "authorization": "AWS4-HMAC-SHA256 Credential=local/20260101/us-east-1/dynamodb/aws4_request, "
    "SignedHeaders=host, Signature=0",
}


@pytest.fixture(scope="module")
def moto_app() -> Any:
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app

    return DomainDispatcherApplication(create_backend_app)


def cors(headers: Any) -> list[str]:
    return [name for name, _ in headers.items() if name.lower().startswith("access-control-")]


def test_unguarded_moto_answers_any_origin(moto_app: Any) -> None:
    """What the guard is for (if moto stops doing this, the guard's tests below still hold)."""
    answer = Client(moto_app).post("/", headers={**LIST_TABLES, "origin": "http://evil.example"}, data="{}")
    assert answer.status_code == 200 and cors(answer.headers), answer.headers


def test_an_sdk_request_works_and_carries_no_cors(moto_app: Any) -> None:
    answer = Client(no_browsers(moto_app, PORT)).post(
        "/", headers=LIST_TABLES, data="{}", base_url=f"http://{HOST}"
    )
    assert answer.status_code == 200, answer.text
    assert "TableNames" in json.loads(answer.text)
    assert cors(answer.headers) == []


@pytest.mark.parametrize(
    ("method", "headers", "host"),
    [
        ("POST", {"origin": "http://evil.example"}, HOST),
        ("POST", {"origin": f"http://{HOST}"}, HOST),  # no page at all is served here, not even its own
        ("OPTIONS", {"access-control-request-method": "POST"}, HOST),
        ("POST", {}, f"evil.example:{PORT}"),
        ("POST", {}, "127.0.0.1:1"),
    ],
)
def test_pages_are_refused(moto_app: Any, method: str, headers: dict[str, str], host: str) -> None:
    client = Client(no_browsers(moto_app, PORT))
    answer = client.open(
        "/", method=method, headers={**LIST_TABLES, **headers}, data="{}", base_url=f"http://{host}"
    )
    assert answer.status_code == 403
    assert "TableNames" not in answer.text and cors(answer.headers) == []
    # its length told: the server keeps the connection open, so a client would otherwise wait for more
    assert answer.headers["content-length"] == str(len(answer.data))


def test_cors_headers_the_app_sends_are_taken_off() -> None:
    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        start_response("200 OK", [("Access-Control-Allow-Origin", "*"), ("X-Kept", "1")])
        return [b"{}"]

    answer = Client(no_browsers(app, PORT)).get("/", base_url=f"http://localhost:{PORT}")
    assert answer.status_code == 200 and answer.headers["x-kept"] == "1" and cors(answer.headers) == []


# the content bucket's objects are served by the same app: a page may neither read nor write them
S3_AUTH = {
    "authorization": "AWS4-HMAC-SHA256 Credential=local/20260101/us-east-1/s3/aws4_request, "
    "SignedHeaders=host, Signature=0",
    "x-amz-content-sha256": "UNSIGNED-PAYLOAD",
}


def test_the_content_buckets_objects_are_served_to_an_sdk_and_refused_to_pages(moto_app: Any) -> None:
    client = Client(no_browsers(moto_app, PORT))
    base = f"http://{HOST}"
    assert client.put("/riverbeam-local-content", headers=S3_AUTH, base_url=base).status_code == 200
    key = "/riverbeam-local-content/messages/abc"
    put = client.put(key, headers=S3_AUTH, data=b"secret content", base_url=base)
    assert put.status_code == 200 and cors(put.headers) == []
    got = client.get(key, headers=S3_AUTH, base_url=base)
    assert got.status_code == 200 and got.data == b"secret content" and cors(got.headers) == []
    for method, headers in (("GET", {"origin": "http://evil.example"}), ("OPTIONS", {})):
        refused = client.open(key, method=method, headers={**S3_AUTH, **headers}, base_url=base)
        assert refused.status_code == 403 and b"secret content" not in refused.data
        assert cors(refused.headers) == []
    elsewhere = client.get(key, headers=S3_AUTH, base_url=f"http://evil.example:{PORT}")
    assert elsewhere.status_code == 403 and b"secret content" not in elsewhere.data

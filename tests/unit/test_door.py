"""The local stack's door (riverbeam_local.stack.door) as ASGI middleware, called in-process with the scopes a
server hands it: what it lets through (and without the secret), what it refuses and with which answer."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from riverbeam_local.stack.door import Door

PORT = 3123
SECRET = "s3cret-of-the-stack-0123456789abcdef"
HOST = f"127.0.0.1:{PORT}"
Message = dict[str, Any]


class App:
    """The stack's app behind the door: remembers the scope it was given, answers 200 or accepts."""

    def __init__(self) -> None:
        self.scopes: list[dict[str, Any]] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        self.scopes.append(scope)
        if scope["type"] == "websocket":
            await send({"type": "websocket.accept"})
            return
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})


def scope(
    kind: str = "http",
    method: str = "GET",
    path: str = "/sessions/x",
    headers: dict[str, str] | None = None,
    query: bytes = b"",
    denial: bool = True,
) -> dict[str, Any]:
    """A request to the stack, by default from its own client (its Host and its secret, on HTTP)."""
    sent = {"host": HOST, **({"authorization": f"Bearer {SECRET}"} if kind == "http" else {})}
    for name, value in (headers or {}).items():
        sent.pop(name, None)
        if value is not None:
            sent[name] = value
    found: dict[str, Any] = {
        "type": kind,
        "path": path,
        "raw_path": path.encode(),
        "query_string": query,
        "headers": [(k.encode("latin-1"), v.encode("latin-1")) for k, v in sent.items()],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", PORT),
        "scheme": "ws" if kind == "websocket" else "http",
        "root_path": "",
    }
    if kind == "http":
        found["method"] = method
    elif denial:
        found["extensions"] = {"websocket.http.response": {}}
    return found


def knock(request: dict[str, Any]) -> tuple[App, list[Message]]:
    """The request through a door on PORT: the app behind it, and what was sent back."""
    app, sent = App(), []

    async def receive() -> Message:
        return {"type": "websocket.connect"} if request["type"] == "websocket" else {"type": "http.request"}

    async def send(message: Message) -> None:
        sent.append(message)

    asyncio.run(Door(app, PORT, SECRET)(request, receive, send))
    return app, sent


def answer(sent: list[Message]) -> tuple[int, dict[str, str], Any]:
    start, *bodies = sent
    assert start["type"].endswith("http.response.start"), sent
    headers = {k.decode(): v.decode() for k, v in start["headers"]}
    body = b"".join(m.get("body", b"") for m in bodies)
    return (
        start["status"],
        headers,
        json.loads(body) if headers.get("content-type") == "application/json" else body,
    )


def refused(request: dict[str, Any]) -> tuple[int, str, dict[str, str]]:
    """A refusal: its status, its code, its headers; the app never saw the request."""
    app, sent = knock(request)
    assert app.scopes == [], "the app saw a refused request"
    status, headers, body = answer(sent)
    error = body["error"]
    assert (
        set(error) == {"code", "message", "request_id"} and error["request_id"] == headers["apigw-requestid"]
    )
    assert SECRET not in json.dumps(body)
    return status, error["code"], headers


# ---------------------------------------------------------------------------- the secret


def test_the_secret_lets_a_request_in_and_stays_at_the_door() -> None:
    app, sent = knock(scope(headers={"x-other": "kept"}))
    assert answer(sent)[0] == 200
    (seen,) = app.scopes
    names = [name for name, _ in seen["headers"]]
    assert b"authorization" not in names and b"x-other" in names  # the handlers never see the secret


@pytest.mark.parametrize(
    "authorization",
    [None, "", "Bearer", "Bearer wrong-secret-0123456789", f"Basic {SECRET}", f"Bearer {SECRET}x", SECRET],
)
def test_no_secret_or_a_wrong_one_is_401(authorization: str | None) -> None:
    status, code, headers = refused(
        scope(method="POST", path="/invoke", headers={"authorization": authorization})
    )
    assert (status, code) == (401, "BEM-033")
    assert headers["www-authenticate"].startswith("Bearer")


def test_the_scheme_is_case_insensitive() -> None:
    assert answer(knock(scope(headers={"authorization": f"bearer {SECRET}"}))[1])[0] == 200


def test_a_websocket_carries_the_secret_in_its_query_and_the_handlers_get_the_rest() -> None:
    query = b"session_id=abc&user_id=ana%20b&secret=" + SECRET.encode() + b"&x=1"
    app, sent = knock(scope("websocket", path="/ws", query=query))
    assert sent == [{"type": "websocket.accept"}]
    assert (
        app.scopes[0]["query_string"] == b"session_id=abc&user_id=ana%20b&x=1"
    )  # as it came, less the secret


@pytest.mark.parametrize(
    "query",
    [b"session_id=abc", b"session_id=abc&secret=wrong", b"secret=" + SECRET.encode() + b"&secret=other"],
)
def test_a_websocket_without_the_secret_is_refused_with_401(query: bytes) -> None:
    status, code, _ = refused(scope("websocket", path="/ws", query=query))
    assert (status, code) == (401, "BEM-033")


def test_a_websocket_bearer_header_is_not_its_secret() -> None:
    request = scope(
        "websocket", path="/ws", query=b"session_id=abc", headers={"authorization": f"Bearer {SECRET}"}
    )
    assert refused(request)[:2] == (401, "BEM-033")


def test_a_server_without_the_denial_extension_closes_the_handshake() -> None:
    app, sent = knock(scope("websocket", path="/ws", query=b"session_id=abc", denial=False))
    assert app.scopes == [] and sent == [{"type": "websocket.close", "code": 1008}]


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/"),
        ("HEAD", "/"),
        ("GET", "/inbox/app.js"),
        ("GET", "/openapi.json"),
        ("POST", "/@connections/abc"),
    ],
)
def test_the_page_the_openapi_document_and_the_management_api_need_no_secret(method: str, path: str) -> None:
    # the management API is called by the handlers through boto3, which signs: its header is left alone
    signed = "AWS4-HMAC-SHA256 Credential=local/..."
    app, sent = knock(scope(method=method, path=path, headers={"authorization": signed}))
    assert answer(sent)[0] == 200
    assert (b"authorization", signed.encode()) in app.scopes[0]["headers"]


@pytest.mark.parametrize(
    ("method", "path"), [("POST", "/"), ("DELETE", "/inbox/app.js"), ("POST", "/openapi.json")]
)
def test_only_the_pages_reads_are_open(method: str, path: str) -> None:
    assert refused(scope(method=method, path=path, headers={"authorization": None}))[:2] == (401, "BEM-033")


# ---------------------------------------------------------------------------- origin and host


@pytest.mark.parametrize(
    "origin", ["http://evil.example", "null", f"http://127.0.0.1:{PORT + 1}", f"https://{HOST}"]
)
@pytest.mark.parametrize("kind", ["http", "websocket"])
def test_another_origin_is_refused_whatever_the_secret(origin: str, kind: str) -> None:
    query = b"secret=" + SECRET.encode()
    status, code, _ = refused(
        scope(kind, method="POST", path="/invoke", headers={"origin": origin}, query=query)
    )
    assert (status, code) == (403, "BEM-034")


def test_another_origin_cannot_read_even_the_page() -> None:
    assert refused(scope(path="/", headers={"origin": "http://evil.example"}))[:2] == (403, "BEM-034")


@pytest.mark.parametrize("origin", [f"http://{HOST}", f"http://localhost:{PORT}", f"http://LOCALHOST:{PORT}"])
def test_the_stacks_own_origins_are_let_in(origin: str) -> None:
    assert answer(knock(scope(method="POST", path="/resume", headers={"origin": origin}))[1])[0] == 200


@pytest.mark.parametrize(
    "host", [None, "evil.example", f"evil.example:{PORT}", "127.0.0.1", f"127.0.0.2:{PORT}"]
)
@pytest.mark.parametrize("kind", ["http", "websocket"])
def test_another_host_is_refused_with_403(host: str | None, kind: str) -> None:
    query = b"secret=" + SECRET.encode()
    assert refused(scope(kind, path="/ws", headers={"host": host}, query=query))[:2] == (403, "BEM-034")


def test_localhost_is_the_stacks_host_too() -> None:
    assert answer(knock(scope(headers={"host": f"localhost:{PORT}"}))[1])[0] == 200


# ---------------------------------------------------------------------------- bodies


@pytest.mark.parametrize(
    "content_type",
    [
        None,
        "text/plain",
        "text/plain;charset=UTF-8",
        "application/x-www-form-urlencoded",
        "multipart/form-data",
    ],
)
def test_a_body_not_sent_as_json_is_415(content_type: str | None) -> None:
    headers = {"content-type": content_type, "content-length": "2"}
    status, code, _ = refused(scope(method="POST", path="/invoke", headers=headers))
    assert (status, code) == (415, "BEM-003")


@pytest.mark.parametrize("framing", [{"content-length": "2"}, {"transfer-encoding": "chunked"}])
def test_a_json_body_is_let_in(framing: dict[str, str]) -> None:
    headers = {"content-type": "Application/JSON; charset=utf-8", **framing}
    assert answer(knock(scope(method="POST", path="/invoke", headers=headers))[1])[0] == 200


def test_a_request_without_a_body_has_no_type_to_check() -> None:
    headers = {"content-length": "0"}
    assert answer(knock(scope(method="POST", path="/sessions/x", headers=headers))[1])[0] == 200


def test_the_secret_is_checked_before_the_body() -> None:
    headers = {"content-type": "text/plain", "content-length": "2", "authorization": None}
    assert refused(scope(method="POST", path="/invoke", headers=headers))[:2] == (401, "BEM-033")


# ---------------------------------------------------------------------------- what a browser is told


def test_the_page_gets_its_content_security_policy() -> None:
    _, headers, _ = answer(knock(scope(path="/", headers={"authorization": None}))[1])
    policy = dict(part.strip().split(" ", 1) for part in headers["content-security-policy"].split(";"))
    assert policy["default-src"] == "'self'" and policy["script-src"] == "'self'"
    assert policy["connect-src"] == f"'self' ws://{HOST} ws://localhost:{PORT}"
    assert policy["frame-ancestors"] == "'none'"
    assert "'unsafe-inline'" not in headers["content-security-policy"]
    assert headers["x-content-type-options"] == "nosniff"


def test_the_api_and_its_refusals_are_never_a_page() -> None:
    for sent in (knock(scope())[1], knock(scope(headers={"authorization": None}))[1]):
        _, headers, _ = answer(sent)
        assert headers["content-security-policy"] == "default-src 'none'; frame-ancestors 'none'"
        assert headers["x-content-type-options"] == "nosniff"
        assert not any(name.startswith("access-control-") for name in headers)

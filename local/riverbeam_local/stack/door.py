"""The local stack's door: any page the developer visits can reach 127.0.0.1, so every request is checked
before the app sees it. The Host must be the stack's (a page behind DNS rebinding names its own), an Origin,
where one is sent, the stack's own, the stack's secret must come with it (`Authorization: Bearer` on HTTP,
`secret=` in a WebSocket's query) and a body must be sent as `application/json` (a page of another origin
cannot send that without a preflight, and the door answers none). The page, `GET /openapi.json` and the
management API need no secret. A refusal is the error JSON (a refused handshake on the WebSocket); what
passes reaches the handlers without the secret.

With `--auth jwt` a token replaces the secret: an HTTP request's `Authorization: Bearer <JWT>` is checked as
the HTTP API's JWT authorizer checks it (a refusal is 401 BEM-030 with the reason) and its claims are handed
to the function in the event; a WebSocket goes on to `$connect`, whose function checks its `token=`, as on
AWS. `GET /login.json` (the pool `riverbeam login` signs in to) needs no token."""

from __future__ import annotations

import hmac
import logging
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl, unquote_plus

import anyio
from riverbeam.errors import BeamError
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..lambda_like import api_gateway_id

log = logging.getLogger("riverbeam_local")
SECRET_PARAMETER = "secret"
JSON_METHODS = frozenset({"POST", "PUT", "PATCH"})
READ_METHODS = frozenset({"GET", "HEAD"})
OPEN_READS = ("/openapi.json",)
CHANNELS_PREFIX = "/channels/"
PAGE_PATH, PAGE_ASSETS = "/", "/inbox/"
MANAGEMENT_PREFIX = "/@connections/"
# the page's own files and API only; no inline script or style, never inside another page's frame
PAGE_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self' {websockets}; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)
API_POLICY = "default-src 'none'; frame-ancestors 'none'"
NO_SECRET = (
    "the stack's secret is missing or wrong: send Authorization: Bearer <secret> (a WebSocket: &secret=). "
    "riverbeam dev prints the page's URL with it and keeps it in its data dir's secret file"
)
FOREIGN_HOST = "the Host header is not the stack's (127.0.0.1 or localhost, on its port)"
FOREIGN_ORIGIN = "a request from a page of another origin is refused"
NOT_JSON = "a request body is JSON, sent as Content-Type: application/json"
NO_TOKEN = "send Authorization: Bearer <JWT> (AuthMode jwt: riverbeam login --url <the stack's URL>)"
LOGIN_PATH = "/login.json"
# where the door leaves a verified token's claims for the HTTP API's events (asgi_app)
CLAIMS_KEY = "riverbeam.jwt_claims"
Verifier = Callable[[str], dict[str, Any]]


def _is_page(path: str) -> bool:
    return path == PAGE_PATH or path.startswith(PAGE_ASSETS)


def _needs_no_secret(scope: Scope) -> bool:
    """The page's files, the OpenAPI document and the management API (which the handlers call with boto3,
    to an unguessable connection id)."""
    if scope["type"] != "http":
        return False
    path = scope["path"]
    # the approval channels' routes (CONTRACT 16): their own signature or token is their door
    if scope["method"] in ("GET", "POST") and path.startswith(CHANNELS_PREFIX):
        return True
    if path.startswith(MANAGEMENT_PREFIX):
        return True
    return scope["method"] in READ_METHODS and (_is_page(path) or path in OPEN_READS)


def _sends_other_than_json(scope: Scope, headers: Headers) -> bool:
    """A body (chunked, or of a length other than 0) whose media type is not application/json."""
    if scope["type"] != "http" or scope["method"] not in JSON_METHODS:
        return False
    length = headers.get("content-length", "0").strip()
    if "transfer-encoding" not in headers and length.isdigit() and int(length) == 0:
        return False
    return headers.get("content-type", "").split(";", 1)[0].strip().lower() != "application/json"


def _printable(text: str, limit: int = 200) -> str:
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in text[:limit])


def _query_without_secret(query: bytes) -> bytes:
    """The query string as it came, less its `secret` parameters (the handlers never see the secret)."""

    def name(part: bytes) -> str:
        return unquote_plus(part.split(b"=", 1)[0].decode("latin-1"))

    return b"&".join(part for part in query.split(b"&") if name(part) != SECRET_PARAMETER)


class Door:
    """ASGI middleware in front of the stack's app, for the stack on 127.0.0.1:`port`."""

    def __init__(self, app: ASGIApp, port: int, secret: str, verifier: Verifier | None = None) -> None:
        self.app = app
        self.verifier = verifier  # AuthMode jwt: tokens, not the secret
        self.hosts = frozenset({f"127.0.0.1:{port}", f"localhost:{port}"})
        self.origins = frozenset(f"http://{host}" for host in self.hosts)
        self.secret = secret.encode()
        self.page_policy = PAGE_POLICY.format(websockets=" ".join(f"ws://{h}" for h in sorted(self.hosts)))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        send = self._with_headers(scope, send)
        refusal = self.refusal(scope)
        if refusal is None and self._needs_token(scope):
            scope, refusal = await self._authorized(scope)
        if refusal is not None:
            await self._refuse(scope, receive, send, refusal)
        elif _needs_no_secret(scope):
            await self.app(scope, receive, send)
        else:
            await self.app(self._without_secret(scope), receive, send)

    # ------------------------------------------------------------------ the checks

    def refusal(self, scope: Scope) -> BeamError | None:
        """Why this request is refused, or None."""
        headers = Headers(scope=scope)
        if headers.get("host", "").lower() not in self.hosts:
            return BeamError("BEM-034", FOREIGN_HOST)
        origin = headers.get("origin")
        if origin is not None and origin.lower() not in self.origins:
            return BeamError("BEM-034", FOREIGN_ORIGIN)
        if _needs_no_secret(scope) or (self.verifier is not None and scope["path"] == LOGIN_PATH):
            return None
        if self.verifier is None and not self._has_secret(scope, headers):
            return BeamError("BEM-033", NO_SECRET)
        if _sends_other_than_json(scope, headers):
            return BeamError("BEM-003", NOT_JSON)
        return None

    def _has_secret(self, scope: Scope, headers: Headers) -> bool:
        if scope["type"] == "websocket":
            query = scope.get("query_string", b"").decode("latin-1")
            given = [v for k, v in parse_qsl(query, keep_blank_values=True) if k == SECRET_PARAMETER]
            return len(given) == 1 and hmac.compare_digest(given[0].encode(), self.secret)
        scheme, _, value = headers.get("authorization", "").partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(value.strip().encode(), self.secret)

    def _needs_token(self, scope: Scope) -> bool:
        open_path = _needs_no_secret(scope) or scope["path"] == LOGIN_PATH
        return self.verifier is not None and scope["type"] == "http" and not open_path

    async def _authorized(self, scope: Scope) -> tuple[Scope, BeamError | None]:
        """The scope with the bearer token's claims, or the refusal of the authorizer."""
        assert self.verifier is not None  # the caller's check
        scheme, _, token = Headers(scope=scope).get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return scope, BeamError("BEM-030", NO_TOKEN)
        try:
            claims = await anyio.to_thread.run_sync(self.verifier, token.strip())
        except BeamError as refused:
            return scope, refused
        return {**scope, CLAIMS_KEY: claims}, None

    def _without_secret(self, scope: Scope) -> Scope:
        if scope["type"] == "websocket":
            return {**scope, "query_string": _query_without_secret(scope.get("query_string", b""))}
        headers = [(k, v) for k, v in scope["headers"] if k.lower() != b"authorization"]
        return {**scope, "headers": headers}

    # ------------------------------------------------------------------ the answers

    def _with_headers(self, scope: Scope, send: Send) -> Send:
        """`send`, adding to every HTTP answer (a refused handshake's too) what keeps a browser safe."""
        policy = self.page_policy if _is_page(scope["path"]) else API_POLICY
        added = [
            (b"x-content-type-options", b"nosniff"),
            (b"content-security-policy", policy.encode()),
            (b"referrer-policy", b"no-referrer"),
        ]

        async def sending(message: Message) -> None:
            if message["type"] in ("http.response.start", "websocket.http.response.start"):
                message["headers"] = [*message.get("headers", []), *added]
            await send(message)

        return sending

    async def _refuse(self, scope: Scope, receive: Receive, send: Send, refusal: BeamError) -> None:
        request_id = api_gateway_id()
        headers = {"apigw-requestid": request_id}
        if refusal.status == 401:
            headers["www-authenticate"] = 'Bearer realm="riverbeam dev"'
        answer = JSONResponse(refusal.to_dict(request_id), status_code=refusal.status, headers=headers)
        kind = "WS" if scope["type"] == "websocket" else scope["method"]
        log.info("%s %s %d %s refused", kind, _printable(scope["path"]), refusal.status, refusal.code)
        if scope["type"] == "http" or "websocket.http.response" in scope.get("extensions", {}):
            await answer(scope, receive, send)
        else:  # a server without the denial extension: the handshake is closed (403)
            await send({"type": "websocket.close", "code": 1008})

"""The embedded AWS endpoints' door: moto answers a request only once its SigV4 signature is proven to be made
with the stack's key (aws_key). The signature is recomputed for the request as received with botocore's own
signer (`SigV4Auth`, `S3SigV4Auth` for S3) and compared in constant time; moto's management routes
(`/moto-api/...`: reset, the dashboard, the data dump; its instance metadata) are closed whatever the request
carries. A refusal has the shape of the service's own errors, so boto3 raises a `ClientError` saying why:
UnrecognizedClientException / InvalidAccessKeyId for another key, InvalidSignatureException /
SignatureDoesNotMatch for a wrong signature, MissingAuthenticationTokenException / AccessDenied for none.

Why a signature and not a Unix socket: boto3 and the AWS CLI reach an endpoint by URL only, so a socket would
need a proxy or an adapter in every client; every AWS client signs already, so the stack's own code changes
in one place (the key its clients sign with) and a user's script needs only the environment file."""

from __future__ import annotations

import hashlib
import hmac
import io
import json
import re
import urllib.parse
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from xml.sax.saxutils import escape

from botocore.auth import S3SigV4Auth, SigV4Auth
from botocore.awsrequest import AWSRequest
from werkzeug.wsgi import get_input_stream

from .aws_key import StackKey

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
# AWS's own allowance between the signer's clock and the service's
MAX_SKEW = timedelta(minutes=15)
# the signing names of what the stack embeds (EventBridge signs as `events`, DynamoDB Streams as `dynamodb`)
SERVED = frozenset({"dynamodb", "sqs", "s3", "events", "cognito-idp"})
# what Cognito answers without a signature (a user's sign-in, the pool's public keys): open here too
OPEN_TARGETS = frozenset(
    f"AWSCognitoIdentityProviderService.{name}" for name in ("InitiateAuth", "RespondToAuthChallenge")
)
OPEN_PATHS = re.compile(r"/[a-z0-9-]+_[A-Za-z0-9]+/\.well-known/(jwks\.json|openid-configuration)")
# moto's own routes, as its dispatcher finds them (a path that starts so): its management API and dashboard,
# its favicon, its instance metadata
CLOSED = re.compile(r"/*(moto-api|favicon\.ico$|latest/meta-data/|latest/api/)", re.IGNORECASE)
MAX_AUTHORIZATION = 4096
AUTHORIZATION = re.compile(
    r"AWS4-HMAC-SHA256 Credential=(?P<key_id>[^/\s,]{1,128})/(?P<date>\d{8})/(?P<region>[a-z0-9-]{1,32})/"
    r"(?P<service>[a-z0-9-]{1,32})/aws4_request,\s*SignedHeaders=(?P<headers>[a-z0-9;._-]{1,1024}),\s*"
    r"Signature=(?P<signature>[0-9a-f]{64})"
)
KEY_ID = re.compile(r"Credential=([^/\s,]{1,128})/")
AMZ_DATE = "%Y%m%dT%H%M%SZ"
HEX_SHA256 = re.compile(r"[0-9a-f]{64}")
KEY_FILE_HINT = (
    "the stack's embedded AWS endpoints take only requests signed with its key (<data dir>/aws.env)"
)


@dataclass(frozen=True)
class Refusal:
    """Why a request is refused: the code a JSON protocol (DynamoDB, SQS, EventBridge) and an XML one (S3,
    SQS's query protocol) give it, and a message."""

    json_code: str
    xml_code: str
    message: str


MISSING = Refusal(
    "MissingAuthenticationTokenException",
    "AccessDenied",
    f"Request is missing Authentication Token: {KEY_FILE_HINT}",
)
UNKNOWN_KEY = Refusal(
    "UnrecognizedClientException",
    "InvalidAccessKeyId",
    f"The security token included in the request is invalid: {KEY_FILE_HINT}",
)
BAD_SIGNATURE = Refusal(
    "InvalidSignatureException",
    "SignatureDoesNotMatch",
    "The request signature we calculated does not match the signature you provided (a SigV4 signature "
    "covering host and x-amz-date, made with the stack's key)",
)
SKEWED = Refusal(
    "InvalidSignatureException",
    "RequestTimeTooSkewed",
    "Signature expired: the request's x-amz-date is more than 15 minutes from the stack's clock",
)
WRONG_PAYLOAD = Refusal(
    "InvalidSignatureException",
    "XAmzContentSHA256Mismatch",
    "The provided x-amz-content-sha256 header does not match what was computed",
)
NOT_SERVED = Refusal(
    "AccessDeniedException",
    "AccessDenied",
    "the stack embeds DynamoDB (with its streams), SQS, S3, EventBridge and Cognito (--auth jwt) only",
)
_CLOSED_ANSWER = json.dumps(
    {"__type": "NotFound", "message": "moto's management routes are closed on the stack's embedded endpoints"}
).encode()


def _header(environ: dict[str, Any], name: str) -> str | None:
    """A request header as received (WSGI keeps two of them out of the HTTP_ prefix)."""
    key = name.upper().replace("-", "_")
    found = environ.get(key if key in ("CONTENT_TYPE", "CONTENT_LENGTH") else f"HTTP_{key}")
    return None if found is None else str(found)


def _target(environ: dict[str, Any]) -> str:
    """The request's path and query as sent (WSGI's PATH_INFO is decoded; the raw URI and QUERY_STRING are
    not): what the client signed."""
    raw = environ.get("RAW_URI") or environ.get("REQUEST_URI")
    if raw:
        path = urllib.parse.urlsplit(str(raw)).path
    else:
        path = urllib.parse.quote(str(environ.get("PATH_INFO", "")).encode("latin-1"), safe="/~")
    query = str(environ.get("QUERY_STRING", ""))
    return path + (f"?{query}" if query else "")


def _signature(found: re.Match[str], environ: dict[str, Any], body: bytes, key: StackKey) -> str | None:
    """The signature the stack's key makes for this request, by botocore's signer; None where a header the
    client says it signed is missing."""
    headers: dict[str, str] = {}
    for name in found["headers"].split(";"):
        value = _header(environ, name)
        if value is None:
            return None
        headers[name] = value
    request = AWSRequest(
        method=str(environ.get("REQUEST_METHOD", "")),
        url=f"http://{headers['host']}{_target(environ)}",
        headers=headers,
        data=body,
    )
    request.context["timestamp"] = headers["x-amz-date"]
    signer_class = S3SigV4Auth if found["service"] == "s3" else SigV4Auth
    signer = signer_class(key.credentials(), found["service"], found["region"])
    canonical = signer.canonical_request(request)
    signature: str = signer.signature(signer.string_to_sign(request, canonical), request)
    return signature


def _skewed(amz_date: str, now: datetime) -> bool:
    try:
        signed_at = datetime.strptime(amz_date, AMZ_DATE).replace(tzinfo=UTC)
    except ValueError:
        return True
    return abs(now - signed_at) > MAX_SKEW


def _open(environ: dict[str, Any]) -> bool:
    """A request Cognito takes unsigned: a sign-in (POST), or a GET of a pool's keys."""
    if environ.get("REQUEST_METHOD") == "POST":
        return _header(environ, "x-amz-target") in OPEN_TARGETS
    return environ.get("REQUEST_METHOD") == "GET" and bool(OPEN_PATHS.fullmatch(_target(environ)))


def refusal_of(environ: dict[str, Any], body: bytes, key: StackKey, now: datetime) -> Refusal | None:
    """Why this request may not reach moto, or None when it is signed with the stack's key."""
    authorization = _header(environ, "authorization")
    if authorization is None and _open(environ):
        return None
    if authorization is None:
        return MISSING
    if len(authorization) > MAX_AUTHORIZATION:
        return BAD_SIGNATURE
    named = KEY_ID.search(authorization)
    if named is None or not hmac.compare_digest(named[1], key.access_key_id):
        return UNKNOWN_KEY
    found = AUTHORIZATION.fullmatch(authorization.strip())
    if found is None:
        return BAD_SIGNATURE
    signed = found["headers"].split(";")
    if "host" not in signed or "x-amz-date" not in signed:
        return BAD_SIGNATURE
    if _skewed(_header(environ, "x-amz-date") or "", now):
        return SKEWED
    expected = _signature(found, environ, body, key)
    if expected is None or not hmac.compare_digest(expected, found["signature"]):
        return BAD_SIGNATURE
    declared = _header(environ, "x-amz-content-sha256") or ""
    if HEX_SHA256.fullmatch(declared) and not hmac.compare_digest(declared, hashlib.sha256(body).hexdigest()):
        return WRONG_PAYLOAD  # the signature covers the declared hash; the body must be what it hashes
    if found["service"] not in SERVED:
        return NOT_SERVED
    return None


def _refused(refusal: Refusal, environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
    """The refusal as the service would answer it: JSON for a request with X-Amz-Target, else S3's XML (or
    the query protocol's, for a form)."""
    if "HTTP_X_AMZ_TARGET" in environ:
        status, kind = "400 Bad Request", "application/x-amz-json-1.0"
        body = json.dumps({"__type": refusal.json_code, "message": refusal.message}).encode()
    else:
        status, kind = "403 Forbidden", "application/xml"
        error = f"<Code>{escape(refusal.xml_code)}</Code><Message>{escape(refusal.message)}</Message>"
        if str(environ.get("CONTENT_TYPE", "")).startswith("application/x-www-form-urlencoded"):
            body = f"<ErrorResponse><Error><Type>Sender</Type>{error}</Error></ErrorResponse>".encode()
        else:
            body = f'<?xml version="1.0" encoding="UTF-8"?>\n<Error>{error}</Error>'.encode()
    if environ.get("REQUEST_METHOD") == "HEAD":
        body = b""
    start_response(status, [("Content-Type", kind), ("Content-Length", str(len(body)))])
    return [body]


def _closed(start_response: Callable[..., Any]) -> list[bytes]:
    headers = [("Content-Type", "application/json"), ("Content-Length", str(len(_CLOSED_ANSWER)))]
    start_response("404 Not Found", headers)
    return [_CLOSED_ANSWER]


def _body(environ: dict[str, Any]) -> bytes:
    """The request's body, read whole (at once where its length is given: werkzeug's stream reads in
    chunks)."""
    length = str(environ.get("CONTENT_LENGTH") or "")
    if length.isdigit():
        return bytes(environ["wsgi.input"].read(int(length)))
    return bytes(get_input_stream(environ).read())  # chunked, or no body


def signed_only(
    app: WSGIApp, key: StackKey, clock: Callable[[], datetime] = lambda: datetime.now(UTC)
) -> WSGIApp:
    """`app` behind the door: its management routes closed, and every other request refused unless it is
    signed with `key`. A refused request never reaches `app`, so it changes nothing."""

    def guarded(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if CLOSED.match(str(environ.get("PATH_INFO", ""))) or CLOSED.match(_target(environ)):
            return _closed(start_response)
        body = _body(environ)
        refusal = refusal_of(environ, body, key, clock())
        if refusal is not None:
            return _refused(refusal, environ, start_response)
        # moto reads the body again
        environ["wsgi.input"] = io.BytesIO(body)
        environ["CONTENT_LENGTH"] = str(len(body))
        return app(environ, start_response)

    return guarded

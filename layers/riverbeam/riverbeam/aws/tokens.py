"""JWS compact tokens (RFC 7515, 7519) verified with PyJWT against an issuer's JWK set (RFC 7517).

PyJWT checks the signature and the registered claims: exp, iss and sub required, exp, nbf and iat with no
leeway, the issuer exactly, sub and jti strings. Around it, only what PyJWT leaves to its caller:
- the algorithms a token may use are its key's, by the key's type and curve, never the token's choice:
  RS256/384/512 for an RSA key (of 2048 bits at least), the one ES* of an EC key's curve; never `none` or
  HMAC, so no algorithm confusion. PyJWK reads the keys;
- before PyJWT reads a token: three segments of strict, canonical base64url (PyJWT takes `=` padding), and a
  header that is a strict JSON object (see json_object) asking for no extension (`crit`, `b64`);
- the payload is read as strictly, and its times must be JSON numbers (PyJWT takes "1700000000" and true);
- a Refused's message is told to the caller, so it is always one of the constants below, never PyJWT's.
Import it only where a token is verified: PyJWT and `cryptography` are in the tokens layer alone, which only
the connections function has (the import budgets: docs/benchmarks.md)."""

from __future__ import annotations

import base64
import functools
import json
import re
from typing import TYPE_CHECKING, Any, NamedTuple

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa

if TYPE_CHECKING:
    import urllib.request

# bounds checked before anything is decoded: API Gateway's query is smaller, an issuer's key set far smaller
MAX_TOKEN_CHARS = 16 * 1024
MAX_KEY_SET_BYTES = 1024 * 1024
MIN_RSA_BITS = 2048

# what the caller is told (CONTRACT: BEM-030's message), in words of our own
MALFORMED = "the token is not a well-formed JWT"
INVALID = "the token is not valid"
EXPIRED = "the token has expired"
NOT_YET = "the token is not valid yet"
ANOTHER_ISSUER = "the token is from another issuer"
ALGORITHM = "the token's algorithm is not accepted for its key"
SIGNATURE = "the token's signature does not verify"
REQUIRED = ("exp", "iss", "sub")

# PyJWT's refusals (the first that matches, so subclasses first), in our words; any other is INVALID
_REFUSALS: tuple[tuple[type[jwt.PyJWTError], str], ...] = (
    (jwt.InvalidAlgorithmError, ALGORITHM),
    (jwt.InvalidSignatureError, SIGNATURE),
    (jwt.ExpiredSignatureError, EXPIRED),
    (jwt.ImmatureSignatureError, NOT_YET),
    (jwt.InvalidIssuerError, ANOTHER_ISSUER),
)
_RSA_ALGORITHMS = ("RS256", "RS384", "RS512")
# an EC key's curve: the one algorithm it signs with (RFC 7518 3.4)
_EC_ALGORITHMS = {"P-256": "ES256", "P-384": "ES384", "P-521": "ES512"}
_COMPACT = re.compile(r"[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+")


class Refused(Exception):
    """A token that does not verify; its message (one of the constants above) is for the caller."""


class Token(NamedTuple):
    """A token of strict form: its text, and its header read (not trusted before the signature verifies)."""

    text: str
    header: dict[str, Any]


class PublicKey(NamedTuple):
    """A key of the issuer's set and the algorithms a token signed by it may name."""

    key: rsa.RSAPublicKey | ec.EllipticCurvePublicKey
    algorithms: tuple[str, ...]


def _b64decode(segment: str) -> bytes:
    """Canonical base64url (unused low bits zero): no two strings stand for one header or signature."""
    raw = base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))
    if base64.urlsafe_b64encode(raw).rstrip(b"=") != segment.encode("ascii"):
        raise ValueError("not canonical base64url")
    return raw


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # a member named twice is refused (RFC 7515 4): Python's json (PyJWT's) keeps the last one silently
    found = dict(pairs)
    if len(found) != len(pairs):
        raise ValueError("a member is named twice")
    return found


def _finite(text: str) -> float:
    # 1e400 would read as infinity: an exp that never comes
    number = float(text)
    if number in (float("inf"), float("-inf")):
        raise ValueError("a number out of range")
    return number


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")  # NaN, Infinity: Python's json reads them, RFC 8259 does not


def json_object(raw: bytes) -> dict[str, Any]:
    """A JSON object (UTF-8), strictly; ValueError or RecursionError (nesting) for anything else."""
    value = json.loads(
        raw.decode("utf-8"),
        object_pairs_hook=_unique,
        parse_float=_finite,
        parse_constant=_refuse_constant,
    )
    if not isinstance(value, dict):
        raise ValueError("not a JSON object")
    return value


def parse(token: str) -> Token:
    """The token, its form checked (JWS compact: header.payload.signature, strict base64url);
    Refused(MALFORMED) for anything else, for a header that is no strict JSON object, or one that asks for
    an extension."""
    if len(token) > MAX_TOKEN_CHARS or not _COMPACT.fullmatch(token):
        raise Refused(MALFORMED)
    try:
        header_raw, _payload, _signature = (_b64decode(part) for part in token.split("."))
        header = json_object(header_raw)
    except (ValueError, RecursionError):
        raise Refused(MALFORMED) from None
    # `crit` names extensions a verifier must understand (RFC 7515 4.1.11); b64 false (RFC 7797) is one
    if "crit" in header or header.get("b64", True) is not True:
        raise Refused(MALFORMED)
    return Token(token, header)


def public_key(jwk: dict[str, Any]) -> PublicKey:
    """A JWK's public key (read by PyJWK); ValueError for one no token is verified with here: another type
    (HMAC's `oct` among them), an RSA key under MIN_RSA_BITS, a curve without a JOSE algorithm, a private
    key, a malformed member."""
    kty, crv = jwk.get("kty"), jwk.get("crv")
    if kty == "RSA":
        algorithms: tuple[str, ...] = _RSA_ALGORITHMS
    elif kty == "EC" and isinstance(crv, str) and crv in _EC_ALGORITHMS:
        algorithms = (_EC_ALGORITHMS[crv],)
    else:
        raise ValueError("a key type (or curve) no token is verified with here")
    try:  # read as the key type's algorithm, whatever `alg` the JWK names
        key = jwt.PyJWK(jwk, algorithms[0]).key
    except jwt.PyJWTError as error:
        raise ValueError(f"the JWK is no key: {error}") from None
    if not isinstance(key, rsa.RSAPublicKey | ec.EllipticCurvePublicKey):
        raise ValueError("the JWK is no public key")
    if isinstance(key, rsa.RSAPublicKey) and key.key_size < MIN_RSA_BITS:
        raise ValueError(f"an RSA key of {key.key_size} bits")
    # a JWK that names its algorithm is used with that one alone (RFC 7517 4.4)
    if "alg" in jwk:
        algorithms = tuple(a for a in algorithms if a == jwk["alg"])
    return PublicKey(key, algorithms)


def key_set(body: bytes) -> dict[str, PublicKey]:
    """A JWK set's signing keys by kid: those with a kid, whose `use` is `sig` or absent, and that
    public_key reads; an issuer may publish others (encryption keys, newer types), which are passed over.
    ValueError (or RecursionError) if the body is no JWK set."""
    entries = json_object(body).get("keys")
    if not isinstance(entries, list):
        raise ValueError("the key set has no list of keys")
    keys: dict[str, PublicKey] = {}
    for jwk in entries:
        if not isinstance(jwk, dict) or jwk.get("use") not in ("sig", None):
            continue
        kid = jwk.get("kid")
        if isinstance(kid, str) and kid:
            try:
                keys[kid] = public_key(jwk)
            except ValueError:
                continue
    return keys


@functools.cache
def _opener() -> urllib.request.OpenerDirector:
    import urllib.request  # the runtime's boto3 has imported it already

    class Redirects(urllib.request.HTTPRedirectHandler):
        """Redirects to http and https only (urllib's own follow one to ftp too)."""

        def redirect_request(self, req: Any, fp: Any, code: Any, msg: Any, headers: Any, newurl: str) -> Any:
            if not newurl.lower().startswith(("http://", "https://")):
                return None  # urllib then raises the redirect as an HTTPError
            return super().redirect_request(req, fp, code, msg, headers, newurl)

    return urllib.request.build_opener(Redirects)


def fetch_key_set(url: str, timeout: float) -> dict[str, PublicKey]:
    """The signing keys published at `url` (key_set), fetched with `timeout` seconds for each step of the
    request; any error urllib or key_set raises passes on (OSError, ValueError, RecursionError)."""
    import urllib.request

    # urllib opens file: and ftp: URLs too; a key set is served over HTTP
    if not url.lower().startswith(("http://", "https://")):
        raise ValueError("the key set's URL is not http or https")
    request = urllib.request.Request(url, headers={"User-Agent": "riverbeam", "Accept": "application/json"})
    with _opener().open(request, timeout=timeout) as response:
        body = response.read(MAX_KEY_SET_BYTES + 1)
    if len(body) > MAX_KEY_SET_BYTES:
        raise ValueError(f"the key set is larger than {MAX_KEY_SET_BYTES} bytes")
    return key_set(body)


class _StrictPayload(jwt.PyJWT):
    """PyJWT reading the payload strictly, through the hook it has for subclasses: once the signature
    verifies, before PyJWT checks the claims."""

    def _decode_payload(self, decoded: dict[str, Any]) -> dict[str, Any]:
        try:
            claims = json_object(decoded["payload"])
        except (ValueError, RecursionError):
            raise Refused(INVALID) from None
        # PyJWT reads times with int(), which takes "1700000000" and true; null is a missing claim
        times = [claims[name] for name in ("exp", "nbf", "iat") if claims.get(name) is not None]
        if any(isinstance(value, bool) or not isinstance(value, int | float) for value in times):
            raise Refused(INVALID)
        return claims


_PYJWT = _StrictPayload()


def verify(token: Token, key: PublicKey, issuer: str) -> dict[str, Any]:
    """The token's claims, once PyJWT has verified its signature by `key` and its claims at the wall
    clock; Refused with the reason if not. The audience is the caller's to check."""
    # PyJWT checks this again; it takes a key with no algorithm for a mistake of its caller's
    if token.header.get("alg") not in key.algorithms:  # `in` on a tuple compares: any JSON type will do
        raise Refused(ALGORITHM)
    try:
        claims: dict[str, Any] = _PYJWT.decode(
            token.text,
            key.key,
            algorithms=list(key.algorithms),
            issuer=issuer,
            leeway=0,
            options={"require": list(REQUIRED), "verify_aud": False},
        )
    except jwt.MissingRequiredClaimError as missing:
        raise Refused(
            f"the token has no {missing.claim} claim" if missing.claim in REQUIRED else INVALID
        ) from None
    except jwt.PyJWTError as error:
        raise Refused(
            next((words for kind, words in _REFUSALS if isinstance(error, kind)), INVALID)
        ) from None
    return claims

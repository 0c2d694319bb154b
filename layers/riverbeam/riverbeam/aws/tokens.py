"""JWS compact tokens (RFC 7515, 7519) verified against an issuer's JWK set (RFC 7517) on `cryptography`'s
primitives alone. A $connect verifies one token at its cold start: PyJWT's imports cost it about 61 ms of
CPU (its algorithms module imports X.509, EC and SSH serialization whatever the token), these about 11 ms.

Only what an issuer's tokens need, nothing the token could steer: the key's type (and curve) decides the
algorithms a token may use (RS256/384/512 for RSA, the one ES* of an EC key's curve; never `none` or HMAC,
so no algorithm confusion), and a Refused's message is told to the caller, so it is always one of the
constants below, never a library's words. Import it only where a token is verified: it imports
`cryptography`, which only the tokens layer carries."""

from __future__ import annotations

import base64
import functools
import json
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

if TYPE_CHECKING:
    import urllib.request

    from cryptography.hazmat.primitives.asymmetric import ec

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

# RFC 7518 3.3 (RSASSA-PKCS1-v1_5) and 3.4 (ECDSA): the hash of each algorithm
_HASHES: dict[str, Callable[[], hashes.HashAlgorithm]] = {
    "RS256": hashes.SHA256,
    "RS384": hashes.SHA384,
    "RS512": hashes.SHA512,
    "ES256": hashes.SHA256,
    "ES384": hashes.SHA384,
    "ES512": hashes.SHA512,
}
_RSA_ALGORITHMS = ("RS256", "RS384", "RS512")
# an EC key's curve: the one algorithm it signs with, and the bytes of each coordinate (and of r and s)
_CURVES = {"P-256": ("ES256", 32), "P-384": ("ES384", 48), "P-521": ("ES512", 66)}
_BASE64URL = re.compile(r"[A-Za-z0-9_-]+")


class Refused(Exception):
    """A token that does not verify; its message (one of the constants above) is for the caller."""


class Token(NamedTuple):
    """A token's parts: its header read, its payload still bytes (read once the signature verifies)."""

    header: dict[str, Any]
    signing_input: bytes
    payload: bytes
    signature: bytes


class PublicKey(NamedTuple):
    """A key of the issuer's set and the algorithms a token signed by it may name."""

    key: rsa.RSAPublicKey | ec.EllipticCurvePublicKey
    algorithms: tuple[str, ...]


def _b64decode(segment: str) -> bytes:
    """Strict base64url without padding (RFC 7515 2): no other character, no `=`, and the canonical form
    only (unused low bits zero), so that no two strings stand for one signature or header."""
    if not _BASE64URL.fullmatch(segment):
        raise ValueError("not base64url")
    raw = base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))
    if base64.urlsafe_b64encode(raw).rstrip(b"=") != segment.encode("ascii"):
        raise ValueError("not canonical base64url")
    return raw


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # a member named twice is refused (RFC 7515 4): no reader may see another value than the one checked
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
    """The token's parts (JWS compact: header.payload.signature); Refused(MALFORMED) for anything else, for
    a header that is no JSON object, or one that asks for an extension (none is understood here)."""
    if len(token) > MAX_TOKEN_CHARS:
        raise Refused(MALFORMED)
    parts = token.split(".")
    if len(parts) != 3:
        raise Refused(MALFORMED)
    try:
        header_raw, payload, signature = (_b64decode(part) for part in parts)
        header = json_object(header_raw)
    except (ValueError, RecursionError):
        raise Refused(MALFORMED) from None
    # `crit` names extensions a verifier must understand (RFC 7515 4.1.11); b64 false (RFC 7797) is one
    if "crit" in header or header.get("b64", True) is not True:
        raise Refused(MALFORMED)
    return Token(header, f"{parts[0]}.{parts[1]}".encode("ascii"), payload, signature)


def _member(jwk: dict[str, Any], name: str) -> bytes:
    value = jwk.get(name)
    if not isinstance(value, str):
        raise ValueError(f"the JWK has no {name}")
    return _b64decode(value)


def _ec_key(jwk: dict[str, Any]) -> tuple[ec.EllipticCurvePublicKey, str]:
    """An EC JWK's key (its point checked on its curve) and its curve's one algorithm."""
    from cryptography.hazmat.primitives.asymmetric import ec  # 12 ms: only for an issuer with EC keys

    crv = jwk.get("crv")
    if not isinstance(crv, str) or crv not in _CURVES:
        raise ValueError("the JWK's curve has no JOSE algorithm")
    algorithm, size = _CURVES[crv]
    x, y = _member(jwk, "x"), _member(jwk, "y")
    if len(x) != size or len(y) != size:  # RFC 7518 6.2.1.2: the full length of the curve's coordinates
        raise ValueError("the JWK's coordinates are not of its curve's length")
    curves: dict[str, ec.EllipticCurve] = {
        "P-256": ec.SECP256R1(),
        "P-384": ec.SECP384R1(),
        "P-521": ec.SECP521R1(),
    }
    numbers = ec.EllipticCurvePublicNumbers(int.from_bytes(x, "big"), int.from_bytes(y, "big"), curves[crv])
    return numbers.public_key(), algorithm


def public_key(jwk: dict[str, Any]) -> PublicKey:
    """A JWK's public key; ValueError for one no token is verified with here: another type (HMAC's `oct`
    among them), an RSA key under MIN_RSA_BITS, a curve without a JOSE algorithm, a malformed member."""
    kty = jwk.get("kty")
    key: rsa.RSAPublicKey | ec.EllipticCurvePublicKey
    if kty == "RSA":
        e, n = (int.from_bytes(_member(jwk, name), "big") for name in ("e", "n"))
        key = rsa.RSAPublicNumbers(e, n).public_key()  # checks e and n (odd, 3 <= e < n)
        if key.key_size < MIN_RSA_BITS:
            raise ValueError(f"an RSA key of {key.key_size} bits")
        algorithms: tuple[str, ...] = _RSA_ALGORITHMS
    elif kty == "EC":
        key, algorithm = _ec_key(jwk)
        algorithms = (algorithm,)
    else:
        raise ValueError("a key type no token is verified with here")
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


def _signed(token: Token, key: PublicKey, alg: str) -> bool:
    """Whether the token's signature by `key` verifies with `alg` (one of the key's algorithms)."""
    digest = _HASHES[alg]()
    try:
        if isinstance(key.key, rsa.RSAPublicKey):
            key.key.verify(token.signature, token.signing_input, padding.PKCS1v15(), digest)
            return True
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

        # JOSE signs with r || s, each of the curve's length (RFC 7518 3.4): DER, any other length, is refused
        size = (key.key.curve.key_size + 7) // 8
        if len(token.signature) != 2 * size:
            return False
        r, s = (int.from_bytes(token.signature[i : i + size], "big") for i in (0, size))
        key.key.verify(encode_dss_signature(r, s), token.signing_input, ec.ECDSA(digest))
        return True
    except InvalidSignature:
        return False


def _check_claims(claims: dict[str, Any], issuer: str, now: float) -> None:
    """The registered claims as PyJWT checked them (leeway 0): exp, iss and sub required; exp, nbf and iat
    numbers (not booleans); expired at exp, not valid before nbf nor before iat; iss exactly `issuer`;
    sub and jti strings."""
    for name in REQUIRED:
        if claims.get(name) is None:
            raise Refused(f"the token has no {name} claim")
    times = {name: claims[name] for name in ("exp", "nbf", "iat") if name in claims}
    if any(isinstance(value, bool) or not isinstance(value, int | float) for value in times.values()):
        raise Refused(INVALID)
    if now < times.get("nbf", now) or now < times.get("iat", now):
        raise Refused(NOT_YET)
    if now >= times["exp"]:
        raise Refused(EXPIRED)
    if claims["iss"] != issuer:
        raise Refused(ANOTHER_ISSUER)
    if not isinstance(claims["sub"], str) or not isinstance(claims.get("jti", ""), str):
        raise Refused(INVALID)


def verify(token: Token, key: PublicKey, issuer: str, now: float) -> dict[str, Any]:
    """The token's claims, once its signature by `key` verifies and its claims hold at `now` (seconds
    since the epoch, a parameter so that tests need no clock); Refused with the reason if not. The
    audience is the caller's to check."""
    alg = token.header.get("alg")
    # `in` on a tuple compares: an `alg` of any JSON type is merely not found
    if not isinstance(alg, str) or alg not in key.algorithms:
        raise Refused(ALGORITHM)
    if not _signed(token, key, alg):
        raise Refused(SIGNATURE)
    try:
        claims = json_object(token.payload)
    except (ValueError, RecursionError):
        raise Refused(INVALID) from None
    _check_claims(claims, issuer, now)
    return claims

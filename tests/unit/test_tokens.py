"""riverbeam.aws.tokens, the $connect token check (PyJWT, with the key's algorithms pinned and a strict form
checked first), attacked: every forgery, malformation and claim a token can carry is refused with its exact
reason, in our words, and the tokens PyJWT mints verify. No network (the key sets are given), no clock of the
machine's: PyJWT's is set to the instant each check names."""

from __future__ import annotations

import base64
import datetime
import hashlib
import hmac
import json
import random
import time
from typing import Any
from unittest import mock

import jwt
import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from riverbeam.aws import identity, tokens
from riverbeam.aws.settings import Settings
from riverbeam.errors import BeamError

ISSUER = "https://issuer.example/pool"
AUDIENCE = "riverbeam-client"
NOW = 1_800_000_000
RSA_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
WEAK_RSA_KEY = rsa.generate_private_key(public_exponent=65537, key_size=1024)
EC_KEYS = {crv: ec.generate_private_key(curve) for crv, curve in [
    ("P-256", ec.SECP256R1()), ("P-384", ec.SECP384R1()), ("P-521", ec.SECP521R1())
]}  # fmt: skip
EC_ALGORITHMS = {"ES256": "P-256", "ES384": "P-384", "ES512": "P-521"}
# the 1024-bit key is the one the verifier must not use: PyJWT warns when it signs with it
pytestmark = pytest.mark.filterwarnings("ignore:The RSA key is 1024 bits")


def b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def public_jwk(key: Any, **members: Any) -> dict[str, Any]:
    """The JWK of `key`'s public half, as PyJWT writes it."""
    public = key.public_key()
    writer = (
        jwt.algorithms.RSAAlgorithm if isinstance(public, rsa.RSAPublicKey) else jwt.algorithms.ECAlgorithm
    )
    return {**writer.to_jwk(public, as_dict=True), **members}


def claims(**changes: Any) -> dict[str, Any]:
    found = {"sub": "u1", "iss": ISSUER, "client_id": AUDIENCE, "exp": NOW + 600, "iat": NOW - 10, **changes}
    return {name: value for name, value in found.items() if value is not None}


def mint(key: Any = RSA_KEY, alg: str = "RS256", kid: Any = "k1", **changes: Any) -> str:
    """A token PyJWT signs."""
    return jwt.encode(
        claims(**changes), key, algorithm=alg, headers={"kid": kid} if kid is not None else None
    )


def compact(header: dict[str, Any] | bytes, payload: bytes, sign: Any) -> str:
    """A token put together by hand: `sign(signing_input)` makes its signature."""
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    signing_input = f"{b64(raw)}.{b64(payload)}"
    return f"{signing_input}.{b64(sign(signing_input.encode()))}"


def rs256(data: bytes) -> bytes:
    return RSA_KEY.sign(data, padding.PKCS1v15(), hashes.SHA256())


def es_raw(key: ec.EllipticCurvePrivateKey, digest: hashes.HashAlgorithm, data: bytes) -> bytes:
    """An ECDSA signature as JOSE writes it: r || s, each of the curve's length."""
    r, s = decode_dss_signature(key.sign(data, ec.ECDSA(digest)))
    size = (key.curve.key_size + 7) // 8
    return r.to_bytes(size, "big") + s.to_bytes(size, "big")


RS256_HEADER = {"alg": "RS256", "typ": "JWT", "kid": "k1"}


def at(now: float) -> type[datetime.datetime]:
    """A datetime whose now() is `now`: PyJWT reads its clock as datetime.now(tz=timezone.utc)."""

    class Clock(datetime.datetime):
        @classmethod
        def now(cls, tz: datetime.tzinfo | None = None) -> datetime.datetime:
            return datetime.datetime.fromtimestamp(now, tz)

    return Clock


def verify(token: str, jwk: dict[str, Any] | None = None, now: float = NOW) -> dict[str, Any]:
    """tokens.verify, PyJWT's clock at `now` (the tokens' times are NOW's, weeks ahead of the machine's)."""
    key = tokens.public_key(jwk if jwk is not None else public_jwk(RSA_KEY))
    with mock.patch.object(jwt.api_jwt, "datetime", at(now)):
        return tokens.verify(tokens.parse(token), key, ISSUER)


def refusal(token: str, jwk: dict[str, Any] | None = None, now: float = NOW) -> str:
    with pytest.raises(tokens.Refused) as refused:
        verify(token, jwk, now)
    return str(refused.value)


# ---- what PyJWT mints verifies


@pytest.mark.parametrize("alg", ["RS256", "RS384", "RS512"])
def test_rsa_tokens_minted_by_pyjwt_verify(alg: str) -> None:
    assert verify(mint(alg=alg)) == claims()


@pytest.mark.parametrize("alg", ["ES256", "ES384", "ES512"])
def test_ec_tokens_minted_by_pyjwt_verify(alg: str) -> None:
    key = EC_KEYS[EC_ALGORITHMS[alg]]
    assert verify(mint(key, alg), public_jwk(key, alg=alg)) == claims()


# ---- a token cannot choose its algorithm


def test_alg_none_is_refused() -> None:
    header = {"alg": "none", "kid": "k1"}
    payload = json.dumps(claims()).encode()
    # unsigned: no signature at all is no JWS
    assert refusal(f"{b64(json.dumps(header).encode())}.{b64(payload)}.") == tokens.MALFORMED
    assert refusal(compact(header, payload, lambda _: b"x")) == tokens.ALGORITHM
    assert refusal(compact({**header, "alg": "RS256"}, payload, lambda _: b"x")) == tokens.SIGNATURE


@pytest.mark.parametrize("alg", ["HS256", "HS384", "HS512"])
def test_hmac_signed_with_the_public_key_is_refused(alg: str) -> None:
    """The classic confusion: the RSA public key (which anyone has) used as an HMAC secret."""
    digest = {"HS256": hashlib.sha256, "HS384": hashlib.sha384, "HS512": hashlib.sha512}[alg]
    pem = RSA_KEY.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    for secret in (pem, json.dumps(public_jwk(RSA_KEY)).encode()):
        forged = compact(
            {"alg": alg, "kid": "k1"},
            json.dumps(claims()).encode(),
            lambda data, secret=secret: hmac.new(secret, data, digest).digest(),
        )
        assert refusal(forged) == tokens.ALGORITHM


def test_an_rsa_algorithm_for_an_ec_key_and_an_ec_one_for_an_rsa_key_are_refused() -> None:
    p256 = EC_KEYS["P-256"]
    assert refusal(mint(RSA_KEY, "RS256"), public_jwk(p256)) == tokens.ALGORITHM
    assert refusal(mint(p256, "ES256"), public_jwk(RSA_KEY)) == tokens.ALGORITHM


def test_an_ec_algorithm_for_another_curve_is_refused() -> None:
    p384 = EC_KEYS["P-384"]
    payload = json.dumps(claims()).encode()
    # signed by the P-384 key with SHA-256, as ES256 would hash: ES256 is P-256's alone
    forged = compact({"alg": "ES256", "kid": "k1"}, payload, lambda data: es_raw(p384, hashes.SHA256(), data))
    assert refusal(forged, public_jwk(p384)) == tokens.ALGORITHM
    assert refusal(mint(EC_KEYS["P-256"], "ES256"), public_jwk(p384)) == tokens.ALGORITHM


def test_a_jwk_that_names_its_algorithm_accepts_that_one_alone() -> None:
    assert refusal(mint(alg="RS512"), public_jwk(RSA_KEY, alg="RS256")) == tokens.ALGORITHM
    assert verify(mint(alg="RS256"), public_jwk(RSA_KEY, alg="RS256")) == claims()
    # a JWK for another algorithm than RSA's PKCS#1 ones verifies nothing here
    assert refusal(mint(alg="RS256"), public_jwk(RSA_KEY, alg="PS256")) == tokens.ALGORITHM


@pytest.mark.parametrize("alg", [None, "", "rs256", ["RS256"], {"RS256": 1}, 256])
def test_an_alg_that_is_not_one_of_the_keys_is_refused(alg: Any) -> None:
    header = {"kid": "k1"} | ({} if alg is None else {"alg": alg})
    assert refusal(compact(header, json.dumps(claims()).encode(), rs256)) == tokens.ALGORITHM


# ---- signatures


def test_a_tampered_payload_is_refused() -> None:
    header, _, signature = mint().split(".")
    other = b64(json.dumps(claims(sub="admin")).encode())
    assert refusal(f"{header}.{other}.{signature}") == tokens.SIGNATURE


def test_a_tampered_or_truncated_signature_is_refused() -> None:
    header, payload, signature = mint().split(".")
    raw = bytearray(base64.urlsafe_b64decode(signature + "=="))
    raw[10] ^= 1
    assert refusal(f"{header}.{payload}.{b64(bytes(raw))}") == tokens.SIGNATURE
    assert refusal(f"{header}.{payload}.{b64(bytes(raw[:-1]))}") == tokens.SIGNATURE
    longer = b64(bytes(raw) + b"\0")
    assert refusal(f"{header}.{payload}.{longer}") == tokens.SIGNATURE
    # another key's signature
    assert refusal(mint(), public_jwk(rsa.generate_private_key(public_exponent=65537, key_size=2048))) == (
        tokens.SIGNATURE
    )


def test_an_ec_signature_of_another_length_or_in_der_is_refused() -> None:
    key = EC_KEYS["P-256"]
    jwk = public_jwk(key)
    header, payload, signature = mint(key, "ES256").split(".")
    raw = base64.urlsafe_b64decode(signature + "==")
    assert len(raw) == 64
    for wrong in (raw[:-1], raw + b"\0", raw[:32], b"\0" + raw, b"\0" * 64):
        assert refusal(f"{header}.{payload}.{b64(wrong)}", jwk) == tokens.SIGNATURE
    # the same signature as DER (what cryptography and X.509 write): JOSE's is r || s
    der = key.sign(f"{header}.{payload}".encode(), ec.ECDSA(hashes.SHA256()))
    assert refusal(f"{header}.{payload}.{b64(der)}", jwk) == tokens.SIGNATURE


# ---- the token's form


@pytest.mark.parametrize(
    "change",
    [
        lambda t: t + "=",
        lambda t: t.replace(".", "=.", 1),
        lambda t: t.replace("-", "+").replace("_", "/") if ("-" in t or "_" in t) else t + "+",
        lambda t: t[:20] + " " + t[20:],
        lambda t: t[:20] + "\n" + t[20:],
        lambda t: t[:20] + "é" + t[20:],
        lambda t: " " + t,
        lambda t: t + "\n",
        lambda t: t + ".",
        lambda t: t + ".e30",
        lambda t: t.rsplit(".", 1)[0],
        lambda t: t.split(".", 1)[1],
        lambda t: "." + t.split(".", 1)[1],
        lambda t: "..",
        lambda t: "",
        lambda t: "abc.def.ghi",
        lambda t: t.split(".")[0] + ".." + t.split(".")[2],
    ],
)
def test_anything_but_three_strict_base64url_segments_is_malformed(change: Any) -> None:
    token = mint()
    assert change(token) != token
    assert refusal(change(token)) == tokens.MALFORMED


def test_a_non_canonical_base64url_segment_is_malformed() -> None:
    """The last character's unused bits must be zero: else two strings stand for one signature."""
    header, payload, signature = mint().split(".")
    assert len(signature) % 4 == 2  # 256 bytes: the last character carries 4 unused bits
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    other = alphabet[alphabet.index(signature[-1]) + 1]
    assert base64.urlsafe_b64decode(signature[:-1] + other + "==") == base64.urlsafe_b64decode(
        signature + "=="
    )
    assert refusal(f"{header}.{payload}.{signature[:-1]}{other}") == tokens.MALFORMED


# JSON that is no object (or no JSON, or no UTF-8), refused in a header and in a payload alike
NOT_OBJECTS = [b"not json", b'["alg", "RS256"]', b'"RS256"', b"null", b"[]", b"\xff\xfe{}"]


def nested(depth: int) -> bytes:
    return b'{"alg": "RS256", "kid": "k1", "x": ' + b"[" * depth + b"]" * depth + b"}"


@pytest.mark.parametrize(
    "header",
    [
        *NOT_OBJECTS,
        b'{"alg": "RS256", "kid": "k1", "alg": "none"}',
        b'{"alg": "RS256", "kid": "k1", "x": NaN}',
        b'{"alg": "RS256", "kid": "k1", "crit": ["exp"], "exp": 1}',
        b'{"alg": "RS256", "kid": "k1", "b64": false, "crit": ["b64"]}',
        nested(3000),
    ],
)
def test_a_header_that_is_no_plain_json_object_is_malformed(header: bytes) -> None:
    assert refusal(compact(header, json.dumps(claims()).encode(), rs256)) == tokens.MALFORMED


@pytest.mark.parametrize("payload", [*NOT_OBJECTS, b'{"sub": "u1", "sub": "admin"}', nested(5000)])
def test_a_signed_payload_that_is_no_plain_json_object_is_invalid(payload: bytes) -> None:
    assert refusal(compact(RS256_HEADER, payload, rs256)) == tokens.INVALID


def test_a_huge_token_is_refused_before_anything_is_decoded() -> None:
    assert refusal(mint(padding="x" * tokens.MAX_TOKEN_CHARS)) == tokens.MALFORMED


# ---- claims


@pytest.mark.parametrize("name", ["exp", "nbf", "iat"])
@pytest.mark.parametrize("value", [str(NOW + 600), True, False, [NOW + 600], {"at": NOW}])
def test_times_that_are_no_numbers_are_invalid(name: str, value: Any) -> None:
    assert refusal(mint(**{name: value})) == tokens.INVALID


@pytest.mark.parametrize("number", [b"1e400", b"-1e400", b"NaN", b"Infinity", b"-Infinity"])
def test_an_exp_out_of_range_or_not_json_is_refused(number: bytes) -> None:
    payload = b'{"sub": "u1", "iss": "' + ISSUER.encode() + b'", "exp": ' + number + b"}"
    assert refusal(compact(RS256_HEADER, payload, rs256)) == tokens.INVALID


def test_expiry_and_not_before_hold_with_no_leeway() -> None:
    token = mint(exp=NOW + 600, nbf=NOW + 100)
    assert refusal(token, now=NOW + 99.5) == tokens.NOT_YET
    assert verify(token, now=NOW + 100)["sub"] == "u1"
    assert verify(token, now=NOW + 599.9)["sub"] == "u1"
    assert refusal(token, now=NOW + 600) == tokens.EXPIRED  # exactly at exp
    assert refusal(token, now=NOW + 6000) == tokens.EXPIRED
    assert refusal(mint(exp=NOW - 1)) == tokens.EXPIRED
    # issued in the future: not valid yet
    assert refusal(mint(iat=NOW + 5)) == tokens.NOT_YET
    # PyJWT reads a time in whole seconds (int()): an exp half a second ahead has come, not the one after
    assert verify(mint(exp=NOW + 1.5, nbf=NOW - 0.5))["sub"] == "u1"
    assert refusal(mint(exp=NOW + 0.5)) == tokens.EXPIRED


@pytest.mark.parametrize("name", tokens.REQUIRED)
def test_exp_iss_and_sub_are_required(name: str) -> None:
    assert refusal(mint(**{name: None})) == f"the token has no {name} claim"
    payload = json.dumps({**claims(), name: None}).encode()
    assert refusal(compact(RS256_HEADER, payload, rs256)) == f"the token has no {name} claim"


@pytest.mark.parametrize("iss", [ISSUER + "/", ISSUER.upper(), "https://elsewhere.example", "", 1, [ISSUER]])
def test_another_issuer_is_refused(iss: Any) -> None:
    # by hand: PyJWT mints no iss that is no string
    assert (
        refusal(compact(RS256_HEADER, json.dumps(claims(iss=iss)).encode(), rs256)) == tokens.ANOTHER_ISSUER
    )


def test_a_sub_or_jti_that_is_no_string_is_invalid() -> None:
    assert refusal(mint(sub=1)) == tokens.INVALID
    assert refusal(mint(jti=7)) == tokens.INVALID
    assert verify(mint(jti="j1"))["jti"] == "j1"


# ---- key sets


def key_set(*jwks: dict[str, Any]) -> bytes:
    return json.dumps({"keys": list(jwks)}).encode()


def test_a_key_set_keeps_the_signing_keys_it_can_verify_with() -> None:
    found = tokens.key_set(
        key_set(
            public_jwk(RSA_KEY, kid="rsa", use="sig"),
            public_jwk(EC_KEYS["P-521"], kid="ec"),
            public_jwk(RSA_KEY, kid="encryption", use="enc"),
            public_jwk(RSA_KEY),  # no kid
            public_jwk(RSA_KEY, kid=""),
            public_jwk(RSA_KEY, kid=5),
            public_jwk(WEAK_RSA_KEY, kid="weak"),
            {"kty": "oct", "kid": "hmac", "k": b64(b"secret")},
            {"kty": "OKP", "kid": "ed", "crv": "Ed25519", "x": b64(b"\1" * 32)},
            {**public_jwk(EC_KEYS["P-256"], kid="short"), "x": b64(b"\1" * 31)},
            {**public_jwk(EC_KEYS["P-256"], kid="off-curve"), "y": b64(b"\1" * 32)},
            {**public_jwk(EC_KEYS["P-256"], kid="secp256k1"), "crv": "secp256k1"},
            {**public_jwk(RSA_KEY, kid="even-e"), "e": b64(b"\1\0")},
            {"kty": "RSA", "kid": "no-n", "e": "AQAB"},
            {**public_jwk(RSA_KEY, kid="n-no-string"), "n": 12345},
            # a private key published by mistake is not used (PyJWK reads one as a private key)
            {**jwt.algorithms.RSAAlgorithm.to_jwk(RSA_KEY, as_dict=True), "kid": "private"},
            "not a key",
            ["not", "a", "key"],
        )
    )
    assert set(found) == {"rsa", "ec"}
    assert found["ec"].algorithms == ("ES512",)
    assert found["rsa"].algorithms == ("RS256", "RS384", "RS512")


def test_a_padded_member_of_the_issuers_own_key_reads_as_the_same_key() -> None:
    """PyJWK takes `=` padding in a JWK's members. The key set is the issuer's (fetched from the URL the
    deployment names over HTTPS), not the token sender's: the key it reads is the same key, no other."""
    padded = {**public_jwk(RSA_KEY), "n": public_jwk(RSA_KEY)["n"] + "=="}
    assert tokens.public_key(padded).key.public_numbers() == RSA_KEY.public_key().public_numbers()
    assert verify(mint(), padded) == claims()


@pytest.mark.parametrize("body", [b"{}", b'{"keys": {}}', b"[]", b"<html>", b'{"keys": [], "keys": []}'])
def test_a_body_that_is_no_key_set_is_a_value_error(body: bytes) -> None:
    with pytest.raises(ValueError):
        tokens.key_set(body)


def test_an_rsa_key_under_2048_bits_is_not_used() -> None:
    with pytest.raises(ValueError, match="1024 bits"):
        tokens.public_key(public_jwk(WEAK_RSA_KEY))


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://issuer.example/jwks.json", "jwks.json", ""])
def test_a_key_set_is_fetched_over_http_only(url: str) -> None:
    with pytest.raises(ValueError, match="not http"):
        tokens.fetch_key_set(url, 1.0)


# ---- through identity.verify_token: the refusal the caller gets (BEM-030), the keys from a key set


class Keys:
    def __init__(self, body: bytes) -> None:
        self.keys = tokens.key_set(body)

    def get(self, kid: str) -> tokens.PublicKey | None:
        return self.keys.get(kid)


SETTINGS = Settings.model_validate({"TABLE_NAME": "tokens", "JWT_ISSUER": ISSUER, "JWT_AUDIENCE": AUDIENCE})


@pytest.fixture
def issuer_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    published = Keys(key_set(public_jwk(RSA_KEY, kid="k1"), public_jwk(WEAK_RSA_KEY, kid="weak")))
    monkeypatch.setattr(identity, "signing_keys", lambda url: published)


def live(**changes: Any) -> dict[str, Any]:
    return {"exp": int(time.time()) + 600, "iat": None, **changes}


def refused_by_identity(token: str) -> str:
    with pytest.raises(BeamError) as refused:
        identity.verify_token(SETTINGS, token)
    assert refused.value.code == "BEM-030" and refused.value.field == "token"
    return refused.value.message


@pytest.mark.usefixtures("issuer_keys")
def test_identity_verifies_with_the_key_the_kid_names() -> None:
    assert identity.verify_token(SETTINGS, mint(**live())).user_id == "u1"
    assert refused_by_identity(mint(kid=None, **live())) == "the token names no signing key (kid)"
    assert refused_by_identity(mint(kid="", **live())) == "the token names no signing key (kid)"
    header = {"alg": "RS256", "kid": 1}
    forged = compact(header, json.dumps(claims(**live())).encode(), rs256)
    assert refused_by_identity(forged) == "the token names no signing key (kid)"
    assert (
        refused_by_identity(mint(kid="k2", **live()))
        == "the token is signed by a key the issuer does not have"
    )
    # the issuer's 1024-bit key is not used: a token it signs is as one signed by no key of the issuer's
    weak = mint(WEAK_RSA_KEY, kid="weak", **live())
    assert refused_by_identity(weak) == "the token is signed by a key the issuer does not have"
    assert refused_by_identity(mint(**live(exp=int(time.time()) - 1))) == tokens.EXPIRED
    assert refused_by_identity("abc.def.ghi") == tokens.MALFORMED


@pytest.mark.usefixtures("issuer_keys")
@pytest.mark.parametrize(
    ("audience", "accepted"),
    [
        ({"client_id": AUDIENCE}, True),
        ({"client_id": None, "aud": AUDIENCE}, True),
        ({"client_id": None, "aud": ["other", AUDIENCE]}, True),
        ({"client_id": "other"}, False),
        ({"client_id": None}, False),
        ({"client_id": ["unhashable"], "aud": 5}, False),
        ({"client_id": {"a": 1}, "aud": [{"b": 2}, AUDIENCE]}, True),
        ({"client_id": None, "aud": {AUDIENCE: 1}}, False),
    ],
)
def test_identity_checks_the_audience_whatever_its_type(audience: dict[str, Any], accepted: bool) -> None:
    token = mint(**live(**audience))
    if accepted:
        assert identity.verify_token(SETTINGS, token).user_id == "u1"
    else:
        assert refused_by_identity(token) == "the token is not for this audience"


def mutations(token: str, rng: random.Random) -> str:
    """One random change to `token`: a character replaced, removed, inserted or moved, or a segment's."""
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.=+/ \n\0é"
    at = rng.randrange(len(token))
    kind = rng.randrange(5)
    if kind == 0:
        return token[:at] + rng.choice(alphabet) + token[at + 1 :]
    if kind == 1:
        return token[:at] + token[at + 1 :]
    if kind == 2:
        return token[:at] + rng.choice(alphabet) + token[at:]
    if kind == 3:
        parts = token.split(".")
        rng.shuffle(parts)
        return ".".join(parts)
    return token[:at]


@pytest.mark.usefixtures("issuer_keys")
def test_every_mutation_of_a_valid_token_is_refused_with_bem_030() -> None:
    rng = random.Random(20261203)
    token = mint(**live())
    assert identity.verify_token(SETTINGS, token).user_id == "u1"
    tried = 0
    while tried < 200:
        mutated = mutations(token, rng)
        if mutated == token:
            continue
        tried += 1
        message = refused_by_identity(mutated)
        assert message in {
            tokens.MALFORMED,
            tokens.SIGNATURE,
            tokens.ALGORITHM,
            "the token names no signing key (kid)",
            "the token is signed by a key the issuer does not have",
        }, (mutated, message)

"""Who the caller is (CONTRACT 3.8): the API Gateway authorizer's claims, a WebSocket token checked
against the issuer's keys, or, where the deployment's AuthMode is `none`, what the request says."""

from __future__ import annotations

import functools
import math
import re
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from pydantic import ValidationError

from ..errors import BeamError
from ..models import MAX_GROUP_CHARS, MAX_GROUPS, AuthContext
from ..pipeline.intake import validation_refusal
from . import runtime
from .settings import Settings

if TYPE_CHECKING:
    from .tokens import PublicKey

# How a container keeps the issuer's signing keys (one SigningKeys per JWKS URL):
# - a fetched key set is used for KEYS_LIFESPAN_SECONDS, then fetched again on the next token: this bounds
#   how long a warm container still accepts a key the issuer removed, for one small fetch per 5 minutes;
# - a token whose `kid` is not in the set fetches it again (the issuer published a new key), but only once
#   REFRESH_SECONDS have passed since the last fetch: tokens with made-up kids, however many, cost one
#   fetch per 30 s per container;
# - a fetch that failed is tried again RETRY_SECONDS later at the soonest, so an outage of the key server
#   answers 503 at once rather than making every $connect wait for a fetch, each bounded by
#   FETCH_TIMEOUT_SECONDS (API Gateway gives a $connect 29 s; the issuer answers in well under a second);
# - while the key server cannot be reached, the last set fetched is still used for STALE_SECONDS (keys
#   rarely change, and an outage of the issuer's endpoint is no reason to turn away valid tokens).
KEYS_LIFESPAN_SECONDS = 300.0
REFRESH_SECONDS = 30.0
RETRY_SECONDS = 5.0
FETCH_TIMEOUT_SECONDS = 3.0
STALE_SECONDS = 3600.0

# the key cache's clock (monotonic seconds); tests move it instead of sleeping
clock: Callable[[], float] = time.monotonic


def claimed_groups(value: Any) -> list[str]:
    """A token's groups claim as a list: a JSON array of strings, or the one string API Gateway's JWT
    authorizer makes of an array (`[admins dev]`), or names separated by commas."""
    if isinstance(value, list):
        return [g for g in value if isinstance(g, str) and g]
    if not isinstance(value, str):
        return []
    names = value.strip()
    if names.startswith("[") and names.endswith("]"):
        names = names[1:-1]
    return [g for g in re.split(r"[\s,]+", names) if g]


def _claims_user(claims: dict[str, Any], settings: Settings) -> AuthContext:
    """The caller the claims name: the claim UserIdClaim names (`sub` by default), in the groups of the
    GroupsClaim's."""
    groups_claim, user_claim = settings.groups_claim, settings.user_id_claim
    subject = claims.get(user_claim)
    if not isinstance(subject, str) or not subject:
        raise BeamError("BEM-030", f"the token names no caller ({user_claim})")
    profile = claims.get("profile_id")
    groups = claimed_groups(claims.get(groups_claim))
    try:  # never fewer groups than the token says: a policy may forbid by group
        return AuthContext(
            user_id=subject, profile_id=profile if isinstance(profile, str) else None, groups=groups
        )
    except ValidationError:
        raise BeamError(
            "BEM-030",
            f"the token's {groups_claim} claim holds more than {MAX_GROUPS} groups"
            f" or a name longer than {MAX_GROUP_CHARS} characters",
        ) from None


class Credentials(Protocol):
    """What a request offers as its caller: one form that the HTTP API's authorizer or the issuer's keys
    verify (AuthMode `jwt`), one that the deployment trusts as it stands (AuthMode `none`)."""

    def verified(self, settings: Settings) -> AuthContext: ...

    def trusted(self) -> AuthContext: ...


def caller(settings: Settings, credentials: Credentials) -> AuthContext:
    """The caller of a request (CONTRACT 3.8): the one place the deployment's AuthMode is read."""
    if settings.auth_mode == "jwt":
        return credentials.verified(settings)
    return credentials.trusted()


# NamedTuples, not frozen dataclasses: each of those costs a cold start milliseconds to make
class BodyCaller(NamedTuple):
    """An invoke or resume over HTTP: the authorizer's claims; or the body's auth_context."""

    claims: dict[str, Any]
    body: dict[str, Any] | None

    def verified(self, settings: Settings) -> AuthContext:
        return _claims_user(self.claims, settings)

    def trusted(self) -> AuthContext:
        given = (self.body or {}).get("auth_context")
        if given is None or (isinstance(given, dict) and given.get("user_id") in (None, "")):
            raise BeamError(
                "BEM-030", "auth_context.user_id is required (AuthMode none)", field="auth_context"
            )
        try:  # a malformed identity is the request's fault (BEM-001 naming the field), never an internal one
            return AuthContext.model_validate(given)
        except ValidationError as error:
            raise validation_refusal(error, prefix="auth_context") from None


class QueryCaller(NamedTuple):
    """A read over HTTP: the authorizer's claims; or the `user_id` (and `groups`) query parameters."""

    claims: dict[str, Any]
    user_id: str | None
    groups: tuple[str, ...] = ()

    def verified(self, settings: Settings) -> AuthContext:
        return _claims_user(self.claims, settings)

    def trusted(self) -> AuthContext:
        if not self.user_id:
            raise BeamError(
                "BEM-030", "the user_id query parameter is required (AuthMode none)", field="user_id"
            )
        try:  # a malformed group is the request's fault (BEM-001 naming the field)
            return AuthContext(user_id=self.user_id, groups=list(self.groups))
        except ValidationError as error:
            raise validation_refusal(error, prefix="groups") from None


class MessageCaller(NamedTuple):
    """An invoke or resume sent on a WebSocket connection: its subscriber, in the groups their token gave
    at $connect (AuthMode `jwt`); or, where the body is trusted (AuthMode `none`), in the body's
    `auth_context.groups`, as on HTTP."""

    subscriber: AuthContext
    body: dict[str, Any]

    def verified(self, settings: Settings) -> AuthContext:
        return self.subscriber

    def trusted(self) -> AuthContext:
        given = self.body.get("auth_context")
        groups = given.get("groups", []) if isinstance(given, dict) else []
        try:  # a malformed group is the request's fault (BEM-001 naming the field)
            return AuthContext(user_id=self.subscriber.user_id, groups=groups)
        except ValidationError as error:
            raise validation_refusal(error, prefix="auth_context") from None


class ConnectCaller(NamedTuple):
    """A WebSocket $connect: the `token` query, checked against the issuer's keys (browsers cannot set
    headers on a WebSocket); or the `user_id` query."""

    query: dict[str, str]

    def verified(self, settings: Settings) -> AuthContext:
        token = self.query.get("token")
        if not token:
            raise BeamError("BEM-030", "connect with ?token=<JWT>", field="token")
        return verify_token(settings, token)

    def trusted(self) -> AuthContext:
        if not self.query.get("user_id"):
            raise BeamError("BEM-030", "connect with ?user_id=<id> (AuthMode none)", field="user_id")
        return AuthContext(user_id=self.query["user_id"])


class KeysUnavailable(Exception):
    """The issuer's signing keys cannot be had now; the cause is logged, never told to the caller."""


class SigningKeys:
    """The signing keys published at one JWKS URL, fetched and kept as the comment on
    KEYS_LIFESPAN_SECONDS says. Thread-safe: a fetch holds the lock, so threads never fetch at once."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._lock = threading.Lock()
        self._keys: dict[str, PublicKey] = {}
        self._fetched_at: float | None = None  # the last successful fetch
        self._next_fetch_at = -math.inf
        self._failing = False  # the last fetch failed

    def get(self, kid: str) -> PublicKey | None:
        """The key named `kid`, or None if the issuer has no such key. KeysUnavailable if the keys could
        not be fetched (nor a recent enough set be used), or if `kid` may be a key published since."""
        with self._lock:
            now = clock()
            stale = self._fetched_at is None or now - self._fetched_at >= KEYS_LIFESPAN_SECONDS
            if (stale or kid not in self._keys) and now >= self._next_fetch_at:
                self._fetch()
                now = clock()
            if self._fetched_at is None or now - self._fetched_at >= STALE_SECONDS:
                raise KeysUnavailable
            key = self._keys.get(kid)
            if key is None and self._failing:
                raise KeysUnavailable
            return key

    def _fetch(self) -> None:
        from . import tokens

        try:
            keys = tokens.fetch_key_set(self.url, FETCH_TIMEOUT_SECONDS)
            if not keys:
                raise ValueError("the key set has no signing key with a kid")
        # whatever keeps a usable key set from us is the key server's fault, not the caller's: urllib's
        # errors (URLError, HTTPError, timeouts: OSError), a body that is no JWK set (ValueError, or
        # RecursionError for one nested too deep), or anything else on the way
        except Exception as error:
            self._failing = True
            self._next_fetch_at = clock() + RETRY_SECONDS
            runtime.logger.warning(
                "the issuer's signing keys could not be fetched",
                extra={"jwks_url": self.url, "error": f"{type(error).__name__}: {error}"},
            )
            return
        self._keys = keys
        self._failing = False
        self._fetched_at = clock()
        self._next_fetch_at = self._fetched_at + REFRESH_SECONDS


@functools.cache
def signing_keys(url: str) -> SigningKeys:
    """The container's one SigningKeys for `url`."""
    return SigningKeys(url)


def verify_token(settings: Settings, token: str) -> AuthContext:
    """The caller a JWT from the WebSocket `token` query names (browsers cannot set headers there),
    once verified_claims has checked it."""
    return _claims_user(verified_claims(settings, token), settings)


def verified_claims(settings: Settings, token: str) -> dict[str, Any]:
    """A JWT's claims, checked as the HTTP API's authorizer checks one: signature by the issuer's keys,
    expiry, issuer, and audience (`aud`, or `client_id` as Cognito access tokens carry it). Keys that cannot
    be had are 503 BEM-032, not the caller's fault; a token that does not verify is 401 BEM-030."""
    if not settings.jwt_issuer:
        raise BeamError("BEM-030", "this deployment has no JWT issuer configured")
    from . import tokens  # only $connect with AuthMode jwt needs it (and PyJWT's imports)

    try:
        parsed = tokens.parse(token)
        kid = parsed.header.get("kid")
        if not isinstance(kid, str) or not kid:
            raise BeamError("BEM-030", "the token names no signing key (kid)", field="token")
        try:
            key = signing_keys(settings.signing_keys_url).get(kid)
        except KeysUnavailable:
            raise BeamError("BEM-032") from None
        if key is None:
            raise BeamError("BEM-030", "the token is signed by a key the issuer does not have", field="token")
        # PyJWT checks the token's times at the wall clock, not at the key cache's
        claims = tokens.verify(parsed, key, settings.jwt_issuer)
    except tokens.Refused as refused:  # its message is one of tokens' own words, never PyJWT's
        raise BeamError("BEM-030", str(refused), field="token") from None
    if settings.jwt_audience and not set(settings.jwt_audience) & _audiences(claims):
        raise BeamError("BEM-030", "the token is not for this audience", field="token")
    return claims


def _audiences(claims: dict[str, Any]) -> set[str]:
    """The audiences a token names: `aud` (a string or a list) and `client_id` (as Cognito access tokens
    carry it); values of other types are no audience (nor an error: the token's claims are the caller's)."""
    aud = claims.get("aud")
    named = [aud] if isinstance(aud, str) else aud if isinstance(aud, list) else []
    return {a for a in [*named, claims.get("client_id")] if isinstance(a, str)}

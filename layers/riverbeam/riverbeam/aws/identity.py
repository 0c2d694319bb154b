"""Who the caller is (CONTRACT 3.8): the API Gateway authorizer's claims, a WebSocket token checked
against the issuer's keys, or, where the deployment's AuthMode is `none`, what the request says."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from ..errors import BeamError
from ..models import AuthContext
from .settings import Settings

if TYPE_CHECKING:
    import jwt

_ALGORITHMS = ["RS256", "RS384", "RS512", "ES256", "ES384", "ES512"]


def _claims_user(claims: dict[str, Any]) -> AuthContext:
    subject = claims.get("sub")
    if not isinstance(subject, str) or not subject:
        raise BeamError("BEM-030", "the token names no subject (sub)")
    profile = claims.get("profile_id")
    return AuthContext(user_id=subject, profile_id=profile if isinstance(profile, str) else None)


def http_caller(settings: Settings, jwt_claims: dict[str, Any], body: dict[str, Any] | None) -> AuthContext:
    """The caller of an HTTP route: the authorizer's claims; with AuthMode `none`, the body's auth_context."""
    if settings.auth_mode == "jwt":
        return _claims_user(jwt_claims)
    given = (body or {}).get("auth_context")
    if not isinstance(given, dict) or not isinstance(given.get("user_id"), str) or not given["user_id"]:
        raise BeamError("BEM-030", "auth_context.user_id is required (AuthMode none)", field="auth_context")
    return AuthContext.model_validate(given)


def reader(settings: Settings, jwt_claims: dict[str, Any], user_id_query: str | None) -> str:
    """The caller of a read route: the claims' subject; with AuthMode `none`, the `user_id` query."""
    if settings.auth_mode == "jwt":
        return _claims_user(jwt_claims).user_id
    if not user_id_query:
        raise BeamError("BEM-030", "the user_id query parameter is required (AuthMode none)", field="user_id")
    return user_id_query


@functools.cache
def _signing_keys(url: str) -> jwt.PyJWKClient:
    import jwt  # only $connect with AuthMode jwt needs it (and its 70 ms of imports)

    return jwt.PyJWKClient(url, cache_keys=True, lifespan=3600, timeout=5)


def verify_token(settings: Settings, token: str) -> AuthContext:
    """A JWT from the WebSocket `token` query (browsers cannot set headers there), checked as the HTTP
    API's authorizer checks one: signature by the issuer's keys, expiry, issuer, and audience (`aud`, or
    `client_id` as Cognito access tokens carry it)."""
    if not settings.jwt_issuer:
        raise BeamError("BEM-030", "this deployment has no JWT issuer configured")
    import jwt

    try:
        key = _signing_keys(settings.signing_keys_url).get_signing_key_from_jwt(token)
        claims: dict[str, Any] = jwt.decode(
            token,
            key.key,
            algorithms=_ALGORITHMS,
            issuer=settings.jwt_issuer,
            options={"require": ["exp", "iss", "sub"], "verify_aud": False},
        )
    except jwt.PyJWTError as error:
        raise BeamError("BEM-030", f"the token was refused: {error}", field="token") from None
    if settings.jwt_audience:
        audiences = claims.get("aud", [])
        audiences = [audiences] if isinstance(audiences, str) else list(audiences)
        if not set(settings.jwt_audience) & {*audiences, claims.get("client_id")}:
            raise BeamError("BEM-030", "the token is not for this audience", field="token")
    return _claims_user(claims)

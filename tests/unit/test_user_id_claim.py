"""The caller with AuthMode jwt (CONTRACT 18): the claim the `UserIdClaim` parameter names (USER_ID_CLAIM):
`sub` by default, `cognito:username` where approvers are listed by name; a token without it is refused."""

from __future__ import annotations

import pytest
from riverbeam.aws.identity import BodyCaller, MessageCaller, QueryCaller
from riverbeam.aws.settings import Settings
from riverbeam.errors import BeamError
from riverbeam.models import AuthContext

CLAIMS = {"sub": "0b6c6c2e-5f1e-4d1a-9d57-3c1f2a2b9e10", "cognito:username": "ana", "cognito:groups": "[ops]"}


def settings(**env: str) -> Settings:
    return Settings.model_validate({"TABLE_NAME": "riverbeam", "AUTH_MODE": "jwt", **env})


def test_the_caller_is_the_sub_claim_by_default() -> None:
    assert settings().user_id_claim == "sub"
    assert BodyCaller(CLAIMS, None).verified(settings()).user_id == CLAIMS["sub"]
    assert QueryCaller(CLAIMS, None).verified(settings()).user_id == CLAIMS["sub"]


def test_the_user_id_claim_setting_names_another_claim() -> None:
    by_name = settings(USER_ID_CLAIM="cognito:username")
    for caller in (
        BodyCaller(CLAIMS, {"auth_context": {"user_id": "mallory"}}),
        QueryCaller(CLAIMS, "mallory"),
    ):
        found = caller.verified(by_name)
        assert (found.user_id, found.groups) == ("ana", ["ops"])  # never the body's or the query's


def test_a_token_without_the_claim_is_refused_naming_it() -> None:
    with pytest.raises(BeamError) as refused:
        BodyCaller({"sub": "x"}, None).verified(settings(USER_ID_CLAIM="cognito:username"))
    assert refused.value.code == "BEM-030" and "cognito:username" in refused.value.message


def test_an_empty_claim_name_is_no_setting() -> None:
    with pytest.raises(ValueError, match="USER_ID_CLAIM"):
        settings(USER_ID_CLAIM="")


def test_a_websocket_message_keeps_its_subscribers_identity() -> None:
    subscriber = AuthContext(user_id="ana")
    assert MessageCaller(subscriber, {}).verified(settings(USER_ID_CLAIM="cognito:username")) == subscriber

"""A caller's groups with AuthMode jwt (CONTRACT 10): the token's `cognito:groups` claim, or the claim the
`GroupsClaim` parameter names (GROUPS_CLAIM), as a JSON array or as the one string API Gateway's JWT
authorizer makes of it; more groups than a caller may have is refused, never cut (a policy may forbid by
group)."""

from __future__ import annotations

from typing import Any

import pytest
from riverbeam.aws.identity import BodyCaller, QueryCaller, claimed_groups
from riverbeam.aws.settings import Settings
from riverbeam.errors import BeamError


def settings(**env: str) -> Settings:
    return Settings.model_validate({"TABLE_NAME": "riverbeam", "AUTH_MODE": "jwt", **env})


@pytest.mark.parametrize(
    ("claim", "groups"),
    [
        (["admins", "dev"], ["admins", "dev"]),
        ("[admins dev]", ["admins", "dev"]),  # an array as API Gateway's authorizer passes it on
        ("admins,dev", ["admins", "dev"]),
        ("[]", []),
        (None, []),
        (["admins", 7, ""], ["admins"]),
    ],
)
def test_a_groups_claim_is_read_as_a_list(claim: Any, groups: list[str]) -> None:
    assert claimed_groups(claim) == groups


def test_the_callers_groups_are_the_cognito_groups_claim() -> None:
    claims = {"sub": "ana", "cognito:groups": "[releasers dev]"}
    assert BodyCaller(claims, None).verified(settings()).groups == ["releasers", "dev"]
    assert QueryCaller(claims, None).verified(settings()).groups == ["releasers", "dev"]


def test_the_groups_claim_parameter_names_another_claim() -> None:
    claims = {"sub": "ana", "cognito:groups": ["ignored"], "groups": ["releasers"]}
    assert BodyCaller(claims, None).verified(settings(GROUPS_CLAIM="groups")).groups == ["releasers"]


def test_more_groups_than_a_caller_may_have_are_refused_not_cut() -> None:
    claims = {"sub": "ana", "cognito:groups": [f"g{i}" for i in range(101)]}
    with pytest.raises(BeamError) as refused:
        BodyCaller(claims, None).verified(settings())
    assert refused.value.code == "BEM-030" and "cognito:groups" in refused.value.message

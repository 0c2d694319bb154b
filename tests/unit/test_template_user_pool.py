"""The template's user pool (CONTRACT 18), in the template as CloudFormation receives it: with AuthMode jwt
and no JwtIssuer, a Cognito user pool, its app client (password sign-in and refresh, no secret) and groups,
whose issuer and audience the authorizer and the functions are given, and outputs naming them; with an
issuer given, no pool. The caller is the claim UserIdClaim names (USER_ID_CLAIM)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.transformed import checker, parameters, transformed

POOL_KINDS = {"AWS::Cognito::UserPool", "AWS::Cognito::UserPoolClient", "AWS::Cognito::UserPoolGroup"}
POOL = {"JwtIssuer": "", "JwtAudience": ""}


def _conditions(auth_mode: str, issuer: str) -> dict[str, bool]:
    jwt = auth_mode == "jwt"
    return {"UseJwt": jwt, "MakeUserPool": jwt and not issuer}


def _made(template: dict[str, Any], auth_mode: str, issuer: str) -> dict[str, dict[str, Any]]:
    """The resources CloudFormation would create for these parameter values (conditions evaluated)."""
    holds = _conditions(auth_mode, issuer)
    return {name: r for name, r in template["Resources"].items() if holds.get(r.get("Condition", ""), True)}


def _resolved(value: Any, holds: dict[str, bool]) -> Any:
    """`value` with each Fn::If of these conditions taken (of others, left as it is)."""
    if isinstance(value, dict) and set(value) == {"Fn::If"} and value["Fn::If"][0] in holds:
        name, then, otherwise = value["Fn::If"]
        return _resolved(then if holds[name] else otherwise, holds)
    if isinstance(value, dict):
        return {k: _resolved(v, holds) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolved(v, holds) for v in value]
    return value


def test_jwt_without_an_issuer_makes_a_pool_a_client_and_groups() -> None:
    template = transformed("jwt", **POOL)
    made = _made(template, "jwt", "")
    kinds = {r["Type"] for r in made.values()}
    assert kinds >= POOL_KINDS
    (client,) = [r["Properties"] for r in made.values() if r["Type"] == "AWS::Cognito::UserPoolClient"]
    assert client["GenerateSecret"] is False  # a command line keeps no secret
    assert set(client["ExplicitAuthFlows"]) == {"ALLOW_USER_PASSWORD_AUTH", "ALLOW_REFRESH_TOKEN_AUTH"}
    assert client["UserPoolId"] == {"Ref": "UserPool"}
    (pool,) = [r["Properties"] for r in made.values() if r["Type"] == "AWS::Cognito::UserPool"]
    assert pool["AdminCreateUserConfig"]["AllowAdminCreateUserOnly"] is True  # no self sign-up
    groups = {
        r["Properties"]["GroupName"] for r in made.values() if r["Type"] == "AWS::Cognito::UserPoolGroup"
    }
    assert "ops" in groups


def test_the_pools_issuer_and_client_reach_the_authorizer_and_every_function() -> None:
    template = transformed("jwt", **POOL)
    holds = _conditions("jwt", "")
    issuer = {"Fn::Sub": "https://cognito-idp.${AWS::Region}.${AWS::URLSuffix}/${UserPool}"}
    config = _resolved(template["Resources"]["HttpJwtAuthorizer"]["Properties"]["JwtConfiguration"], holds)
    assert config == {"Issuer": issuer, "Audience": [{"Ref": "UserPoolClient"}]}
    functions = [r for r in template["Resources"].values() if r["Type"] == "AWS::Lambda::Function"]
    assert functions
    for function in functions:
        variables = _resolved(function["Properties"]["Environment"]["Variables"], holds)
        assert variables["JWT_ISSUER"] == issuer and variables["JWT_AUDIENCE"] == {"Ref": "UserPoolClient"}
        assert variables["USER_ID_CLAIM"] == {"Ref": "UserIdClaim"}
        assert variables["GROUPS_CLAIM"] == {"Ref": "GroupsClaim"}
    outputs = template["Outputs"]
    assert outputs["UserPoolId"]["Value"] == {"Ref": "UserPool"}
    assert outputs["UserPoolClientId"]["Value"] == {"Ref": "UserPoolClient"}
    assert _resolved(outputs["TokenIssuer"]["Value"], holds) == issuer


@pytest.mark.parametrize(("auth_mode", "issuer"), [("jwt", "https://issuer.example"), ("none", "")])
def test_no_pool_with_an_issuer_given_nor_without_jwt(auth_mode: str, issuer: str) -> None:
    overrides = {"JwtIssuer": issuer, "JwtAudience": "rb"} if issuer else {}
    template = transformed(auth_mode, **overrides)
    made = _made(template, auth_mode, issuer)
    assert not {r["Type"] for r in made.values()} & POOL_KINDS
    holds = _conditions(auth_mode, issuer)
    kept = [o for o in template["Outputs"].values() if holds.get(o.get("Condition", ""), True)]
    assert not any("UserPool" in str(_resolved(o["Value"], holds)) for o in kept)
    if issuer:
        config = template["Resources"]["HttpJwtAuthorizer"]["Properties"]["JwtConfiguration"]
        assert _resolved(config, holds) == {
            "Issuer": {"Ref": "JwtIssuer"},
            "Audience": {"Fn::Split": [",", {"Ref": "JwtAudience"}]},
        }


def test_the_user_id_claim_parameter_defaults_to_sub() -> None:
    parameter = checker.read_template()["Parameters"]["UserIdClaim"]
    assert parameter["Default"] == "sub"
    assert checker.read_template()["Parameters"]["GroupsClaim"]["Default"] == "cognito:groups"


def test_the_pool_deployment_passes_the_check() -> None:
    values = parameters("jwt", **POOL)
    matches = checker.findings(transformed("jwt", **POOL), values)
    assert not checker.unaccepted(matches), [checker.describe(m) for m in checker.unaccepted(matches)]

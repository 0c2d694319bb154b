"""The transformed template (as scripts/check_transformed.py makes it) as API Gateway, Lambda and IAM read a
deployment of it: every route of both APIs reaches its function (a Lambda permission whose SourceArn
pattern matches the ARN API Gateway presents for that route's method and path on its stage), the git
credentials' secret is readable whether it is given by name, by full ARN or by an ARN without its random
suffix, a customer key decrypts the secrets through Secrets Manager only, and the default model is an
inference profile that BedrockModelIds' pattern accepts. The calls the functions make are checked against
their roles in tests/functional/test_deployed_permissions.py."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.support.aws_calls import ACCOUNT, REGION, Call, bedrock_calls
from tests.support.iam import (
    Deployment,
    allowed,
    deployment,
    function_of,
    like,
    role_of,
    route_source_arns,
)
from tests.support.transformed import auth_modes, checker, parameters, transformed

SECRET_NAME = "riverbeam/git"
SECRET_ARN = f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:{SECRET_NAME}-AbC123"
KEY_ARN = f"arn:aws:kms:{REGION}:{ACCOUNT}:key/1234abcd-12ab-34cd-56ef-1234567890ab"


def _deployed(auth_mode: str, **overrides: str) -> Deployment:
    return deployment(transformed(auth_mode, **overrides), parameters(auth_mode, **overrides))


def _permissions(d: Deployment) -> list[dict[str, Any]]:
    """The Lambda permissions API Gateway may use: function and SourceArn pattern, resolved."""
    found = []
    for name, resource in d.template["Resources"].items():
        if resource["Type"] != "AWS::Lambda::Permission" or not d.exists(name):
            continue
        if resource["Properties"]["Principal"] == "apigateway.amazonaws.com":
            props = d.resolve(resource["Properties"])
            assert props["Action"] == "lambda:InvokeFunction", name
            found.append({"function": function_of(d, resource["Properties"]["FunctionName"]), **props})
    return found


def _routes(d: Deployment) -> list[tuple[str, str, str]]:
    """Each route that exists in this deployment: (API logical id, route key, the function it reaches)."""
    resources = d.template["Resources"]
    found = []
    for name, route in resources.items():
        if route["Type"] != "AWS::ApiGatewayV2::Route" or not d.exists(name):
            continue
        props = route["Properties"]
        (integration,) = re.findall(r"integrations/\$\{(\w+)\}", props["Target"]["Fn::Sub"])
        uri = resources[integration]["Properties"]["IntegrationUri"]
        found.append((props["ApiId"]["Ref"], props["RouteKey"], function_of(d, uri)))
    return found


def _may_invoke(permissions: list[dict[str, Any]], function: str, source_arn: str) -> bool:
    return any(p["function"] == function and like(source_arn, p["SourceArn"]) for p in permissions)


@pytest.mark.parametrize("origins", ["", "https://inbox.example.com"])
@pytest.mark.parametrize("auth_mode", auth_modes())
def test_every_route_of_both_apis_may_invoke_the_function_it_reaches_on_its_stage(
    auth_mode: str, origins: str
) -> None:
    d = _deployed(auth_mode, **({"AllowedOrigins": origins} if origins else {}))
    permissions, routes = _permissions(d), _routes(d)
    stage = d.parameters["StageName"]
    keys = {key for _, key, _ in routes}
    # the contract's routes (section 7), both APIs', and the preflight route only with AllowedOrigins
    assert {
        "DELETE /sessions/{id}/grants/{grant_id}",
        "GET /sessions/{id}/grants",
        "$connect",
        "resume",
    } <= keys
    assert ("OPTIONS /{proxy+}" in keys) == bool(origins)
    refused = [
        f"{key} -> {function}: {arn}"
        for api, key, function in routes
        for arn in route_source_arns(d, api, key, stage)
        if not _may_invoke(permissions, function, arn)
    ]
    assert not refused, "API Gateway would answer 500 (no permission to invoke):\n" + "\n".join(refused)
    # on its stage only, and no function reached through a route of another's
    for api, key, function in routes:
        for arn in route_source_arns(d, api, key, "other-stage"):
            assert not _may_invoke(permissions, function, arn), arn
        for other in {f for _, _, f in routes} - {function}:
            assert not any(
                _may_invoke(permissions, other, arn) for arn in route_source_arns(d, api, key, stage)
            ), (
                key,
                other,
            )


def _secret_readers(d: Deployment) -> set[str]:
    return {
        function
        for function in ("invoke", "resume", "records", "connections", "worker", "sweep", "events")
        if allowed(
            d.statements(role_of(function)), Call(function, "secretsmanager:GetSecretValue", SECRET_ARN)
        )
    }


@pytest.mark.parametrize(
    "given",
    [SECRET_NAME, SECRET_ARN, SECRET_ARN.removesuffix("-AbC123")],
    ids=["name", "full ARN", "ARN without its suffix"],
)
def test_the_git_secret_is_readable_by_the_functions_that_run_tools_however_it_is_named(given: str) -> None:
    d = _deployed("jwt", GitCredentialsSecret=given)
    # IAM checks the secret's full ARN, whatever the function asked for it by
    assert _secret_readers(d) == {"invoke", "worker"}
    for other in (
        f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:riverbeam/other-AbC123",
        f"arn:aws:secretsmanager:{REGION}:210987654321:secret:{SECRET_NAME}-AbC123",
    ):
        for function in ("invoke", "worker"):
            call = Call(function, "secretsmanager:GetSecretValue", other)
            assert not allowed(d.statements(role_of(function)), call), (given, other)


def test_without_a_git_secret_no_secret_is_readable() -> None:
    assert _secret_readers(_deployed("jwt")) == set()


def _decrypts(d: Deployment, function: str, via: str) -> bool:
    call = Call(function, "kms:Decrypt", KEY_ARN, (("kms:ViaService", via),))
    return allowed(d.statements(role_of(function)), call)


def test_a_customer_key_decrypts_the_secrets_through_secrets_manager_only() -> None:
    via = f"secretsmanager.{REGION}.amazonaws.com"
    keyed = _deployed("jwt", SecretsKmsKeyArn=KEY_ARN, GitCredentialsSecret=SECRET_NAME)
    # the functions that read GitCredentialsSecret or McpHeaderSecretArns' secrets
    assert {f for f in ("invoke", "resume", "records", "worker", "sweep") if _decrypts(keyed, f, via)} == {
        "invoke",
        "resume",
        "worker",
    }
    assert not _decrypts(keyed, "worker", f"s3.{REGION}.amazonaws.com")
    assert not _decrypts(_deployed("jwt"), "worker", via)


def test_the_default_model_is_an_inference_profile_the_agent_functions_may_call() -> None:
    template = checker.read_template()
    spec = template["Parameters"]["BedrockModelIds"]
    (default,) = spec["Default"].split(",")
    assert default.startswith(("us.", "eu.", "apac.", "global."))
    d = _deployed("jwt")
    for function in ("invoke", "worker"):
        statements = d.statements(role_of(function))
        for call in bedrock_calls(function, "ConverseStream", default):
            assert allowed(statements, call), call


@pytest.mark.parametrize(
    ("model_id", "accepted"),
    [
        ("us.anthropic.claude-3-5-haiku-20241022-v1:0", True),
        ("global.anthropic.claude-sonnet-4-5-20250929-v1:0", True),
        ("amazon.nova-lite-v1:0", True),
        ("arn:aws:bedrock:us-east-1::foundation-model/amazon.nova-lite-v1:0", False),
        ("<model-id>", False),
        ("anthropic claude", False),
        ("", False),
    ],
)
def test_bedrock_model_ids_are_checked_by_the_parameters_pattern(model_id: str, accepted: bool) -> None:
    pattern = checker.read_template()["Parameters"]["BedrockModelIds"]["AllowedPattern"]
    assert (re.fullmatch(pattern, model_id) is not None) == accepted

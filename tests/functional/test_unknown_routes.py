"""A route the API does not have gets the API's error JSON, 404 BEM-010 (no such route), not API Gateway's
own `{"message": "Not Found"}`: the template sends every other method and path ($default) to the records
function, whose router answers it, with the declared routes' authorization."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from riverbeam.aws import runtime
from riverbeam.errors import CATALOGUE

from tests.support.lambda_stack import Stack, http_event, lambda_stack, resources_of
from tests.support.stores import snapshot


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[Stack]:
    with lambda_stack(tmp_path) as s:
        yield s


def _http_routes() -> dict[str, dict[str, Any]]:
    return {
        r["Properties"]["RouteKey"]: r
        for r in resources_of("AWS::ApiGatewayV2::Route").values()
        if r["Properties"]["ApiId"] == {"Ref": "HttpApi"}
    }


def test_bem010_is_no_such_route() -> None:
    assert CATALOGUE["BEM-010"] == (404, "no such route")


def test_every_other_route_goes_to_the_records_function_with_the_same_authorization() -> None:
    routes = _http_routes()
    default = routes["$default"]["Properties"]
    read = routes["GET /sessions/{id}"]["Properties"]
    assert default["Target"] == read["Target"] == {"Fn::Sub": "integrations/${HttpRecordsIntegration}"}
    assert (default["AuthorizationType"], default["AuthorizerId"]) == (
        read["AuthorizationType"],
        read["AuthorizerId"],
    )
    # a CORS preflight carries no token: it is let past $default, for API Gateway to answer
    preflight = routes["OPTIONS /{proxy+}"]
    assert preflight["Condition"] == "AllowCrossOrigin"
    assert preflight["Properties"]["AuthorizationType"] == "NONE"
    arns = {
        p["Properties"]["SourceArn"]["Fn::Sub"].rsplit("${HttpApi}", 1)[1]
        for p in resources_of("AWS::Lambda::Permission").values()
        if p["Properties"]["FunctionName"] == {"Ref": "RecordsFunction"}
    }
    assert {"/${StageName}/$default", "/${StageName}/OPTIONS/*"} <= arns


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/nope"),
        ("POST", "/sessions/x"),
        ("DELETE", "/invoke"),
        ("GET", f"/sessions/{uuid.uuid4()}/nope"),
        ("PUT", "/"),
    ],
)
def test_an_unknown_route_is_404_bem010_in_the_error_json(stack: Stack, method: str, path: str) -> None:
    e = http_event("records/session", path=path, query={"user_id": "u1"})
    e["routeKey"] = "$default"
    e["requestContext"]["http"]["method"] = method
    before = snapshot(runtime.beam().store)
    answer = stack.call("records", e)
    assert answer["statusCode"] == 404
    assert answer["headers"]["Content-Type"] == "application/json"
    error = json.loads(answer["body"])["error"]
    assert error == {
        "code": "BEM-010",
        "message": f"no route {method} {path}",
        "request_id": e["requestContext"]["requestId"],
    }
    assert snapshot(runtime.beam().store) == before

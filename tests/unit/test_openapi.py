"""The OpenAPI document of the HTTP API: every route of CONTRACT section 7, valid, and kept in docs/."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

from openapi_spec_validator import validate
from riverbeam.aws.http import invoke_routes, resume_routes
from riverbeam.aws.openapi import openapi_document as document_of
from riverbeam.aws.read_routes import records_routes
from riverbeam.aws.router import http_app

from tests.support.lambda_stack import ROOT, template

ROUTES = {
    ("post", "/invoke"),
    ("post", "/resume"),
    ("get", "/sessions/{id}"),
    ("get", "/sessions/{id}/messages"),
    ("get", "/sessions/{id}/actions"),
    ("get", "/interactions/{id}"),
    ("get", "/runs/{id}"),
    ("get", "/runs/{id}/frames"),
    ("get", "/actions/{id}"),
    ("get", "/approvals"),
    ("get", "/sessions/{id}/grants"),
    ("delete", "/sessions/{id}/grants/{id}"),
}


def openapi_document() -> dict[str, Any]:
    return document_of([invoke_routes, resume_routes, records_routes])


def _routes(paths: dict[str, dict[str, object]]) -> set[tuple[str, str]]:
    return {(method, re.sub(r"\{[^}]+\}", "{id}", path)) for path, ops in paths.items() for method in ops}


def test_the_document_is_valid_and_has_every_route() -> None:
    document = openapi_document()
    validate(document)
    assert _routes(document["paths"]) == ROUTES
    invoke = document["paths"]["/invoke"]["post"]
    assert invoke["requestBody"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/InvokeRequest"
    }
    assert {"200", "202", "400", "403", "404"} <= set(invoke["responses"])
    assert "422" not in json.dumps(document["paths"])  # a body that does not fit is 400 BEM-001


def test_docs_openapi_json_is_up_to_date() -> None:
    written = json.loads((ROOT / "docs" / "openapi.json").read_text())
    assert written == openapi_document(), "run: .venv/bin/python scripts/write_openapi.py"


def _api_routes(api: str) -> set[str]:
    """The route keys of one API: raw ApiGatewayV2 routes, or SAM HttpApi events of the functions."""
    resources = template()["Resources"].values()
    raw = {
        r["Properties"]["RouteKey"]
        for r in resources
        if r["Type"] == "AWS::ApiGatewayV2::Route" and r["Properties"]["ApiId"] == {"Ref": api}
    }
    events = {
        f"{e['Properties']['Method'].upper()} {e['Properties']['Path']}"
        for r in resources
        if r["Type"] == "AWS::Serverless::Function"
        for e in r["Properties"].get("Events", {}).values()
        if e["Type"] == "HttpApi" and e["Properties"].get("ApiId") == {"Ref": api}
    }
    return raw | events


def test_the_template_routes_are_the_documents() -> None:
    # $default answers BEM-010 for any other route, and OPTIONS /{proxy+} lets CORS preflights past it
    # POST /channels/slack is Slack's (a signed form, docs/channels.md), not the JSON API the document is
    # as are the mail links' page and form (an HTML page and its form, docs/channels.md)
    channels = {"POST /channels/slack", "GET /channels/email/{token}", "POST /channels/email/{token}"}
    keys = _api_routes("HttpApi") - {"$default", "OPTIONS /{proxy+}"} - channels
    declared = {(key.split(" ")[0].lower(), re.sub(r"\{[^}]+\}", "{id}", key.split(" ")[1])) for key in keys}
    assert declared - {("get", "/openapi.json")} == ROUTES
    assert _api_routes("WebSocketApi") == {"$connect", "$disconnect", "invoke", "resume"}


def test_the_sample_events_use_the_template_routes() -> None:
    for path in sorted((ROOT / "events").rglob("*.json")):
        sample = json.loads(path.read_text())
        route = sample.get("routeKey")
        if route is not None and " " in route:
            method, pattern = route.split(" ", 1)
            assert (method.lower(), pattern) in ROUTES | {("get", "/openapi.json")}, path
    assert Path(ROOT / "events").is_dir()


def test_get_openapi_json_serves_the_document() -> None:
    event = {"rawPath": "/openapi.json", "requestContext": {"http": {"method": "GET"}, "stage": "$default"}}
    served = http_app(records_routes).resolve(event)
    assert served["statusCode"] == 200
    assert json.loads(served["body"]) == openapi_document()


def test_the_document_is_written_from_the_routes_metadata() -> None:
    """Each read route's 200 is the model its function returns; the builder imports no route table (the
    routers are handed to it), so no route module and it import each other."""
    document = openapi_document()
    for route in (r for r in records_routes.routes if r.documented):
        path = re.sub(r"<([^>]+)>", r"{\1}", route.path)
        if route.method == "DELETE":  # answers 204, no body
            assert "204" in document["paths"][path]["delete"]["responses"], path
            continue
        answered = document["paths"][path]["get"]["responses"]["200"]["content"]["application/json"]
        assert answered["schema"]["$ref"].endswith("/" + route.hints["return"].__name__), path
    source = (ROOT / "layers" / "riverbeam" / "riverbeam" / "aws" / "openapi.py").read_text()
    imported = {
        node.module
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.ImportFrom) and node.module is not None
    }
    assert not imported & {"http", "read_routes", "service"}, imported

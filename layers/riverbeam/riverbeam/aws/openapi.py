"""The OpenAPI document of every HTTP route, as Powertools' resolver writes it from the routes' signatures
and descriptions (riverbeam.aws.http): built by GET /openapi.json and scripts/write_openapi.py only, so
that no other route's cold start imports the resolver."""

from __future__ import annotations

import dataclasses
import inspect
import json
from typing import Annotated, Any, get_args, get_origin

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver
from aws_lambda_powertools.event_handler.openapi.params import Query
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic.json_schema import models_json_schema

from ..models import InvokeRequest, ResumeRequest
from .http import invoke_routes, resume_routes
from .read_routes import records_routes
from .router import Answer, Route, RouteFunction


def _query(annotation: Any) -> Any:
    """`Annotated[int, Field(ge=-1, description=...)]` as the resolver reads a query parameter:
    `Annotated[int, Query(ge=-1, description=...)]`."""
    if get_origin(annotation) is not Annotated:
        return annotation
    kind, *metadata = get_args(annotation)
    (field,) = [m for m in metadata if isinstance(m, FieldInfo)]
    constraints: dict[str, Any] = {}
    for constraint in field.metadata:
        constraints |= dataclasses.asdict(constraint)
    return Annotated[kind, Query(description=field.description, **constraints)]


def _described(route: Route) -> RouteFunction:
    """A stand-in of the route's function with the signature the resolver documents: its path and query
    parameters (not the request) and what it answers."""
    function = route.function
    signature = inspect.signature(function)
    parameters = [
        route.parameters[name].replace(annotation=_query(route.parameters[name].annotation))
        if name in route.parameters
        else parameter.replace(annotation=str)
        for name, parameter in signature.parameters.items()
        if name != "request"
    ]
    # what a route answers itself (a POST's status and model) the resolver does not describe
    returned = route.hints.get("return")
    if returned == Answer:
        returned = inspect.Signature.empty

    def described(**_: Any) -> Any:
        raise NotImplementedError  # never called: the resolver only reads its signature

    described.__name__ = function.__name__
    described.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=parameters, return_annotation=returned
    )
    return described


def openapi_document() -> dict[str, Any]:
    """The request bodies of /invoke and /resume are checked by the pipeline (so that the contract's
    specific codes win over BEM-001), and their schemas added here."""
    app = APIGatewayHttpResolver(enable_validation=True)
    for router in (invoke_routes, resume_routes, records_routes):
        for route in router.routes:
            if route.documented:
                app.route(route.path, route.method, **route.doc)(_described(route))
    document: dict[str, Any] = json.loads(
        app.get_openapi_json_schema(
            title="Riverbeam",
            version="0.1.0",
            description="Agents that ask a person before they act: the HTTP API (CONTRACT section 7).",
        )
    )
    # a body or query that does not fit is answered 400 BEM-001 (section 5), not the resolver's 422
    for operations in document["paths"].values():
        for operation in operations.values():
            operation.get("responses", {}).pop("422", None)
    for unused in ("HTTPValidationError", "ValidationError", "ResponseValidationError"):
        document.get("components", {}).get("schemas", {}).pop(unused, None)
    bodies: dict[str, type[BaseModel]] = {"/invoke": InvokeRequest, "/resume": ResumeRequest}
    _, schemas = models_json_schema(
        [(model, "validation") for model in bodies.values()], ref_template="#/components/schemas/{model}"
    )
    document.setdefault("components", {}).setdefault("schemas", {}).update(schemas.get("$defs", {}))
    for path, model in bodies.items():
        document["paths"][path]["post"]["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{model.__name__}"}}},
        }
    return document

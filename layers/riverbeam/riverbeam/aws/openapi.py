"""The OpenAPI document of the HTTP API, written from the routes' own metadata (riverbeam.aws.router): each
route's method, path, summary and description, its path parameters, its query parameters as its query model
checks them, the model it answers and the answers its declaration lists (`responses`, `body`). Built by
GET /openapi.json and scripts/write_openapi.py only, which hand it the routers."""

from __future__ import annotations

import re
import types
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import JsonSchemaMode, models_json_schema

from .router import Route, Router

REF = "#/components/schemas/{model}"
INFO = {
    "title": "Riverbeam",
    "version": "0.1.0",
    "description": "Agents that ask a person before they act: the HTTP API (CONTRACT section 7).",
}


def _answered(route: Route) -> type[BaseModel] | None:
    """The model a route answers 200 with, where its function returns one (a POST builds its answer)."""
    returned = route.hints.get("return")
    if not isinstance(returned, type) or isinstance(returned, types.GenericAlias):
        return None  # `Answer`, a dict
    return returned if issubclass(returned, BaseModel) else None


def _models(route: Route) -> list[tuple[type[BaseModel], JsonSchemaMode]]:
    found: list[tuple[type[BaseModel], JsonSchemaMode]] = []
    if route.doc.get("body") is not None:
        found.append((route.doc["body"], "validation"))
    answered = _answered(route)
    if answered is not None:
        found.append((answered, "serialization"))
    for answer in route.doc.get("responses", {}).values():
        found += [(m["model"], "serialization") for m in answer.get("content", {}).values()]
    return found


def _schema(model: type[BaseModel]) -> dict[str, str]:
    return {"$ref": REF.format(model=model.__name__)}


def _content(model: type[BaseModel]) -> dict[str, Any]:
    return {"application/json": {"schema": _schema(model)}}


def _parameters(route: Route) -> list[dict[str, Any]]:
    """The path parameters (strings, in path order), then the query's, as the query model checks them."""
    found: list[dict[str, Any]] = [
        {"in": "path", "name": name, "required": True, "schema": {"title": _title(name), "type": "string"}}
        for name in (s[1:-1] for s in route.segments if s[1:-1] in route.path_parameters)
    ]
    if not route.parameters:
        return found
    query = route.query_model.model_json_schema(ref_template=REF)
    for name, schema in query["properties"].items():
        described = {"description": schema["description"]} if "description" in schema else {}
        required = name in query.get("required", [])
        found.append({"in": "query", "name": name, "required": required, "schema": schema} | described)
    return found


def _title(name: str) -> str:
    return name.replace("_", " ").title()


def _operation(route: Route) -> dict[str, Any]:
    responses: dict[str, Any] = {}
    answered = _answered(route)
    if answered is not None:
        responses["200"] = {"description": "Successful Response", "content": _content(answered)}
    for status, answer in sorted(route.doc.get("responses", {}).items()):
        content = {kind: {"schema": _schema(m["model"])} for kind, m in answer.get("content", {}).items()}
        responses[str(status)] = {"description": answer["description"], "content": content}
    path = _openapi_path(route.path)
    operation: dict[str, Any] = {
        "summary": route.doc.get("summary", ""),
        "operationId": re.sub(r"\W", "_", route.function.__name__ + path) + "_" + route.method.lower(),
        "parameters": _parameters(route),
        "responses": responses,
    }
    if "description" in route.doc:
        operation["description"] = route.doc["description"]
    if route.doc.get("body") is not None:
        operation["requestBody"] = {"required": True, "content": _content(route.doc["body"])}
    if not operation["parameters"]:
        del operation["parameters"]
    return operation


def _openapi_path(path: str) -> str:
    return re.sub(r"<([^>]+)>", r"{\1}", path)


def openapi_document(routers: Iterable[Router]) -> dict[str, Any]:
    """The document of every documented route of `routers`."""
    routes = [route for router in routers for route in router.routes if route.documented]
    paths: dict[str, dict[str, Any]] = {}
    for route in routes:
        paths.setdefault(_openapi_path(route.path), {})[route.method.lower()] = _operation(route)
    models = list(dict.fromkeys(pair for route in routes for pair in _models(route)))
    _, schemas = models_json_schema(models, ref_template=REF)
    for route in routes:  # what the query parameters refer to (an enum, a model)
        if route.parameters:
            schemas.setdefault("$defs", {}).update(
                route.query_model.model_json_schema(ref_template=REF).get("$defs", {})
            )
    return {
        "openapi": "3.1.0",
        "info": INFO,
        "servers": [{"url": "/"}],
        "paths": paths,
        "components": {"schemas": schemas.get("$defs", {})},
    }

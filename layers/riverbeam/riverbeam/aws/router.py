"""A small router for API Gateway's HTTP API events (payload 2.0): method and path template to a route
function, whose query parameters a pydantic model checks. It matches and validates as Powertools'
APIGatewayHttpResolver did, without its import (the import budgets, docs/benchmarks.md). The OpenAPI
document is written from these routes' metadata (riverbeam.aws.openapi)."""

from __future__ import annotations

import functools
import inspect
import re
import typing
import urllib.parse
from collections.abc import Callable, Iterable
from typing import Any

from pydantic import BaseModel, ValidationError, create_model

from ..errors import CATALOGUE, BeamError, ErrorResponse
from ..pipeline import intake
from . import refusals

Answer = dict[str, Any]
RouteFunction = Callable[..., "BaseModel | Answer"]

# a path parameter (`<session_id>`) matches one segment, of the characters Powertools' resolver matched:
# RFC 3986's unreserved and sub-delims, and those API Gateway decodes
SEGMENT = re.compile(r"[-._~()'!*:@,;=+&$%<> \[\]{}|^\w]+")


def answer(status: int, body: str) -> Answer:
    """The HTTP API's response (payload 2.0), as the resolver built it."""
    return {
        "statusCode": status,
        "body": body,
        "isBase64Encoded": False,
        "headers": {"Content-Type": "application/json"},
        "cookies": [],
    }


class Request:
    """What a route reads of its HTTP API event."""

    def __init__(self, event: dict[str, Any]) -> None:
        self.event = event
        context = event.get("requestContext") or {}
        self.request_id: str | None = str(context.get("requestId") or "") or None
        self.method = str((context.get("http") or {}).get("method") or "").upper()
        # API Gateway keeps a named stage in rawPath; the routes are the stage's
        stage = str(context.get("stage") or "$default")
        path = str(event.get("rawPath") or "")
        self.path = path.removeprefix("/" + stage) if stage != "$default" else path
        self.claims: dict[str, Any] = ((context.get("authorizer") or {}).get("jwt") or {}).get("claims") or {}

    @property
    def body(self) -> str | bytes:
        return intake.decoded_body(
            self.event.get("body"), base64_encoded=bool(self.event.get("isBase64Encoded"))
        )

    def query(self) -> dict[str, str | list[str]]:
        """The query parameters: API Gateway joins a repeated one's values with commas; as the resolver
        did, such a one is a list (which a scalar parameter refuses), any other a string, commas and all."""
        given: dict[str, str] = self.event.get("queryStringParameters") or {}
        repeated = {
            name
            for name, values in urllib.parse.parse_qs(
                str(self.event.get("rawQueryString") or ""), keep_blank_values=True
            ).items()
            if len(values) > 1
        }
        return {name: value.split(",") if name in repeated else value for name, value in given.items()}


class Route:
    """A method and path template (`/sessions/<session_id>`) served by `function(request, **parameters)`,
    with what the OpenAPI document says of it besides (`doc`: summary, description, responses, body)."""

    def __init__(
        self, method: str, path: str, function: RouteFunction, documented: bool, doc: dict[str, Any]
    ) -> None:
        self.method, self.path, self.function = method, path, function
        self.documented, self.doc = documented, doc
        # matched segment by segment: a regular expression a route would cost a cold start its compiling
        self.segments = path.split("/")
        self.path_parameters = {s[1:-1] for s in self.segments if s.startswith("<") and s.endswith(">")}

    def match(self, path: str) -> dict[str, str] | None:
        """The path parameters, where `path` is this route's."""
        given = path.split("/")
        if len(given) != len(self.segments):
            return None
        values: dict[str, str] = {}
        for template, segment in zip(self.segments, given, strict=True):
            if template.startswith("<") and template[1:-1] in self.path_parameters:
                if SEGMENT.fullmatch(segment) is None:
                    return None
                values[template[1:-1]] = segment
            elif template != segment:
                return None
        return values

    @functools.cached_property
    def hints(self) -> dict[str, Any]:
        return typing.get_type_hints(self.function, include_extras=True)

    @functools.cached_property
    def parameters(self) -> dict[str, inspect.Parameter]:
        """The query parameters: the function's, but the request and the path's, with their annotations
        resolved (`Annotated[int, Field(ge=-1)]`)."""
        return {
            name: parameter.replace(annotation=self.hints[name])
            for name, parameter in inspect.signature(self.function).parameters.items()
            if name != "request" and name not in self.path_parameters
        }

    @functools.cached_property
    def query_model(self) -> type[BaseModel]:
        """Built on the route's first request: a handler pays only for the routes it serves."""
        fields: dict[str, Any] = {
            name: (parameter.annotation, parameter.default) for name, parameter in self.parameters.items()
        }
        return create_model(f"{self.function.__name__}_query", **fields)

    def call(self, request: Request, path_values: dict[str, str]) -> BaseModel | Answer:
        values: dict[str, Any] = {}
        if self.parameters:
            try:
                values = dict(self.query_model.model_validate(request.query()))
            except ValidationError as error:
                raise intake.validation_refusal(error) from None
        return self.function(request, **path_values, **values)


class Router:
    """A set of routes, declared with `@router.get(path, summary=...)` and `@router.post(...)`."""

    def __init__(self) -> None:
        self.routes: list[Route] = []

    def route(
        self, method: str, path: str, *, documented: bool = True, **doc: Any
    ) -> Callable[[RouteFunction], RouteFunction]:
        def register(function: RouteFunction) -> RouteFunction:
            self.routes.append(Route(method, path, function, documented, doc))
            return function

        return register

    def get(self, path: str, **doc: Any) -> Callable[[RouteFunction], RouteFunction]:
        return self.route("GET", path, **doc)

    def post(self, path: str, **doc: Any) -> Callable[[RouteFunction], RouteFunction]:
        return self.route("POST", path, **doc)

    def delete(self, path: str, **doc: Any) -> Callable[[RouteFunction], RouteFunction]:
        return self.route("DELETE", path, **doc)


class HttpApp:
    """The routes of one function: each request answered by its route, or BEM-010; a refusal (or a query
    that does not fit: BEM-001, naming the parameter) answered as CONTRACT 5 says."""

    def __init__(self, routers: Iterable[Router]) -> None:
        self.routes = [route for router in routers for route in router.routes]

    def resolve(self, event: dict[str, Any], context: object = None) -> Answer:
        request = Request(event)
        try:
            for route in self.routes:
                matched = route.match(request.path) if route.method == request.method else None
                if matched is not None:
                    served = route.call(request, matched)
                    if isinstance(served, dict):
                        return served
                    return answer(200, served.model_dump_json(by_alias=True))
            raise BeamError("BEM-010", f"no route {request.method} {request.path}")
        except Exception as error:
            return answer(*refusals.answer(error, request.request_id))


def http_app(*routers: Router) -> HttpApp:
    """An app with the given routes and the error mapping every route shares."""
    return HttpApp(routers)


def error_answers(*codes: str) -> dict[int, dict[str, Any]]:
    """The error answers of a route, for its OpenAPI description: each status with its codes."""
    statuses = sorted({CATALOGUE[c][0] for c in codes})
    return {
        s: {
            "description": ", ".join(c for c in codes if CATALOGUE[c][0] == s),
            "content": {"application/json": {"model": ErrorResponse}},
        }
        for s in statuses
    }


def ok_answer(status: int, model: type[BaseModel], description: str) -> dict[int, dict[str, Any]]:
    return {status: {"description": description, "content": {"application/json": {"model": model}}}}

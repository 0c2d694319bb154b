"""riverbeam.aws.router: routes matched and query parameters checked as Powertools' resolver did."""

from __future__ import annotations

import json
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, Field
from riverbeam.aws.router import Answer, HttpApp, Request, Router, answer


class Page(BaseModel):
    id: str
    after: int
    tag: str | None


routes = Router()


@routes.get("/things/<thing_id>")
def get_thing(
    request: Request,
    thing_id: str,
    after: Annotated[int, Field(ge=-1)] = 0,
    tag: Annotated[str | None, Field(description="a tag")] = None,
) -> Page:
    return Page(id=thing_id, after=after, tag=tag)


@routes.post("/things")
def post_thing(request: Request) -> Answer:
    return answer(202, json.dumps({"body": request.body.decode() if isinstance(request.body, bytes) else ""}))


APP = HttpApp([routes])


def _event(method: str, path: str, query: str = "", stage: str = "v1") -> dict[str, Any]:
    pairs = [pair.split("=", 1) for pair in query.split("&") if pair]
    joined: dict[str, str] = {}
    for name, value in pairs:
        joined[name] = f"{joined[name]},{value}" if name in joined else value
    prefix = "" if stage == "$default" else f"/{stage}"
    return {
        "rawPath": prefix + path,
        "rawQueryString": query,
        "queryStringParameters": joined or None,
        "requestContext": {"http": {"method": method}, "stage": stage, "requestId": "req-1"},
    }


def _call(event: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    got = APP.resolve(event)
    assert got["headers"] == {"Content-Type": "application/json"} and got["cookies"] == []
    return got["statusCode"], json.loads(got["body"])


def test_a_route_gets_its_path_and_checked_query() -> None:
    status, body = _call(_event("get", "/things/a.b~c", "after=3&tag=x,y&other=1"))
    assert (status, body) == (200, {"id": "a.b~c", "after": 3, "tag": "x,y"})
    assert _call(_event("GET", "/things/t", stage="$default"))[1] == {"id": "t", "after": 0, "tag": None}


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("after=-5", "after: Input should be greater than or equal to -1"),
        ("after=1,2", "after: Input should be a valid integer, unable to parse string as an integer"),
        # a repeated parameter is a list, which a scalar one refuses
        ("after=1&after=2", "after: Input should be a valid integer"),
        ("tag=a&tag=b", "tag: Input should be a valid string"),
    ],
)
def test_a_query_that_does_not_fit_is_bem001_naming_it(query: str, message: str) -> None:
    status, body = _call(_event("GET", "/things/t", query))
    assert status == 400
    assert body["error"] == {
        "code": "BEM-001",
        "message": f"invalid request: {message}",
        "request_id": "req-1",
    }


@pytest.mark.parametrize(
    ("method", "path"),
    [("POST", "/things/t"), ("GET", "/things/a/b"), ("GET", "/things/"), ("HEAD", "/things")],
)
def test_no_route_is_bem010(method: str, path: str) -> None:
    status, body = _call(_event(method, path))
    assert (status, body["error"]["code"]) == (404, "BEM-010")
    assert body["error"]["message"] == f"no route {method} {path}"


def test_a_route_answers_itself_and_a_refusal_is_the_contracts_json() -> None:
    event = _event("POST", "/things") | {"body": "aGk=", "isBase64Encoded": True}
    assert _call(event) == (202, {"body": "hi"})
    event = _event("POST", "/things") | {"body": "not base64!", "isBase64Encoded": True}
    assert _call(event)[1]["error"]["code"] == "BEM-001"

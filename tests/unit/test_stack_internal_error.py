"""The local stack's HTTP edge: a function that crashes (its own edge never reached) is answered as the
contract's BEM-500, naming the request, with nothing internal in it; the traceback goes to the log."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest
from riverbeam_local.stack.asgi_app import Api
from riverbeam_local.stack.template import Function, load
from starlette.requests import Request

SECRET = "secret-table-detail"


class Crashing:
    def call(self, function: Function, event: dict[str, Any]) -> Any:
        raise RuntimeError(SECRET)


def _get(path: str) -> Request:
    scope = {
        "type": "http",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": b"user_id=u1",
        "headers": [(b"host", b"127.0.0.1:8000")],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
        "http_version": "1.1",
    }

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    return Request(scope, receive)


def test_a_function_that_crashes_is_answered_bem500(caplog: pytest.LogCaptureFixture) -> None:
    template = load()
    [route] = [r for r in template.http_routes if r.route_key == "GET /sessions/{id}"]
    api = Api(template, Crashing())  # type: ignore[arg-type]
    with caplog.at_level(logging.ERROR):
        response = asyncio.run(api.http_endpoint(route.function, route.route_key)(_get("/sessions/s-1")))
    request_id = dict(response.headers)["apigw-requestid"]
    assert response.status_code == 500 and SECRET not in bytes(response.body).decode()
    assert json.loads(bytes(response.body)) == {
        "error": {"code": "BEM-500", "message": "internal error", "request_id": request_id}
    }
    assert any(r.exc_info and SECRET in str(r.exc_info[1]) for r in caplog.records)

"""Property-based fuzzing of the HTTP handlers from docs/openapi.json (schemathesis' strategies, valid and
invalid requests): no 5xx, every refusal the contract's error JSON under 64 KiB with its catalogue status,
and nothing written by a refused request. Bounded in examples (RIVERBEAM_FUZZ_EXAMPLES per operation and
mode, small by default) and in time (the test's timeout)."""

from __future__ import annotations

import base64
import copy
import json
import os
import urllib.parse
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from riverbeam.aws import runtime
from riverbeam.errors import CATALOGUE
from schemathesis.core import NOT_SET
from schemathesis.generation import GenerationMode

from tests.support.lambda_stack import ROOT, Stack, event, lambda_stack
from tests.support.stores import snapshot

DOCUMENT = json.loads((ROOT / "docs" / "openapi.json").read_text())
SCHEMA = schemathesis.openapi.from_dict(DOCUMENT)
OPERATIONS = [(path, method.upper()) for path, methods in DOCUMENT["paths"].items() for method in methods]
EXAMPLES = int(os.environ.get("RIVERBEAM_FUZZ_EXAMPLES", "15"))
MAX_ERROR_BODY = 64 * 1024
FUNCTION_OF = {"/invoke": "invoke", "/resume": "resume"}


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with lambda_stack(tmp_path_factory.mktemp("fuzz")) as s:
        yield s


@pytest.fixture(scope="module")
def known(stack: Stack) -> dict[str, str]:
    """Ids of records that exist (an interrupted invoke), so generated reads also reach real ones."""
    body = {
        "agent_name": "author",
        "session_id": str(uuid.uuid4()),
        "content": [{"type": "text", "text": "Push docs/update"}],
        "auth_context": {"user_id": "u1"},
    }
    answer = stack.call("invoke", http_event("POST", "/invoke", "/invoke", {}, body))
    result = json.loads(answer["body"])
    return {
        "session_id": result["session_id"],
        "interaction_id": result["interaction_id"],
        "run_id": result["run_id"],
        "action_id": result["action_required"][0]["action_id"],
    }


def _query_value(value: Any) -> str:
    if isinstance(value, list):
        return ",".join(_query_value(v) for v in value)
    if isinstance(value, bool):
        return str(value).lower()
    return "" if value is None else str(value)


def http_event(method: str, template: str, path: str, query: dict[str, Any], body: Any) -> dict[str, Any]:
    """An HTTP API (payload 2.0) event as API Gateway would send the request, on the sample's stage."""
    e = copy.deepcopy(event("records/session"))
    e["routeKey"] = e["requestContext"]["routeKey"] = f"{method} {template}"
    e["rawPath"] = e["requestContext"]["http"]["path"] = f"/{e['requestContext']['stage']}{path}"
    e["requestContext"]["http"]["method"] = method
    e["requestContext"]["requestId"] = str(uuid.uuid4())
    strings = {str(k): _query_value(v) for k, v in query.items()}
    e["queryStringParameters"] = strings or None
    e["rawQueryString"] = urllib.parse.urlencode(strings)
    e["pathParameters"] = None
    if isinstance(body, bytes):  # API Gateway passes a body it takes for binary base64-encoded
        e["body"], e["isBase64Encoded"] = base64.b64encode(body).decode(), True
    else:
        e["body"] = None if body is NOT_SET else json.dumps(body)
    return e


def check_answer(stack: Stack, function: str, e: dict[str, Any]) -> None:
    before = snapshot(runtime.beam().store)
    answer = stack.call(function, e)
    status = answer["statusCode"]
    assert status < 500, answer["body"][:1000]
    if status < 400:
        return
    assert len(answer["body"].encode()) < MAX_ERROR_BODY
    body = json.loads(answer["body"])
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "request_id"}, body
    code = body["error"]["code"]
    assert CATALOGUE[code][0] == status, body
    assert body["error"]["request_id"] == e["requestContext"]["requestId"]
    assert snapshot(runtime.beam().store) == before, f"{code} wrote something"


@pytest.mark.timeout(900)
@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE], ids=str)
@pytest.mark.parametrize("path, method", OPERATIONS, ids=[f"{m} {p}" for p, m in OPERATIONS])
def test_generated_requests_get_the_contracts_answers(
    stack: Stack, known: dict[str, str], path: str, method: str, mode: GenerationMode
) -> None:
    operation = SCHEMA[path][method]
    names = [p["name"] for p in DOCUMENT["paths"][path][method.lower()].get("parameters", [])]
    real = {n: known[n] for n in names if n in known}

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    @given(case=operation.as_strategy(generation_mode=mode), use_real_ids=st.booleans())
    def check(case: Any, use_real_ids: bool) -> None:
        if use_real_ids and real:
            case.path_parameters.update(real)
            case.query.setdefault("user_id", "u1")
        e = http_event(method, path, case.formatted_path, dict(case.query or {}), case.body)
        check_answer(stack, FUNCTION_OF.get(path, "records"), e)

    check()

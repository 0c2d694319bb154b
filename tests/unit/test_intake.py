"""A body is parsed and checked once: fields an adapter sets afterwards keep its size exact and are
checked alone, as a second parse of the whole body would check them."""

from __future__ import annotations

import json
from typing import Any

import pytest
from riverbeam import BeamError
from riverbeam.pipeline import intake, limits


def size(body: dict[str, Any]) -> int:
    return len(json.dumps(body, ensure_ascii=False).encode())


@pytest.mark.parametrize(
    "text, fields",
    [
        ('{"a": 1}', {"auth_context": {"user_id": "é"}}),
        ('{"auth_context": {"user_id": "x"}, "b": [1, 2]}', {"auth_context": {"user_id": "ü" * 300}}),
        ('{"auth_context": "x"}', {"auth_context": None}),
        ('{"action": "resume", "b": 1}', {"action": None, "stream": True}),
        ("{}", {"stream": True}),
        ('{"stream": false}', {"stream": True, "auth_context": {"user_id": "u", "profile_id": "p"}}),
    ],
)
def test_set_fields_keep_the_size_a_full_parse_counts(text: str, fields: dict[str, Any]) -> None:
    body = intake.parse_body(text)
    assert intake.parse_body(body) is body  # parsed once: a Body passes as it is
    changed = intake.with_fields(body, **fields)
    assert changed.size == size(changed) == intake.parse_body(dict(changed)).size
    assert all(changed.get(k) == v for k, v in fields.items() if v is not None)


def test_a_field_set_later_is_checked_as_the_body_would_be() -> None:
    body = intake.parse_body({"content": [{"type": "text", "text": "x"}]})
    huge = {"user_id": "u" * (limits.MAX_IDENTITY_BYTES + 1)}
    with pytest.raises(BeamError) as over:
        intake.with_fields(body, auth_context=huge)
    assert (over.value.code, over.value.field) == ("BEM-002", "auth_context.user_id")
    with pytest.raises(BeamError) as unstorable:
        intake.with_fields(body, auth_context={"user_id": "\ud800"})
    assert unstorable.value.code == "BEM-001"
    near = intake.parse_body({"x": "a" * (limits.MAX_BODY_BYTES - 20)})
    with pytest.raises(BeamError) as too_big:
        intake.with_fields(near, auth_context={"user_id": "someone"})
    assert (too_big.value.code, too_big.value.field) == ("BEM-002", "body")

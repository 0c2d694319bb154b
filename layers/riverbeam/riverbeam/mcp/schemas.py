"""An MCP server's input schemas, checked with the jsonschema library without trusting the server:
- nothing is ever fetched: `$ref`s resolve within the schema document (and the metaschemas jsonschema ships)
  through a `referencing` Registry whose retrieve function refuses, so a schema cannot make the stack send
  a request (to 169.254.169.254 in Lambda, say);
- `pattern` and `patternProperties` run on RE2 (google-re2), which never backtracks, so no pattern can
  freeze the stack; a pattern RE2 cannot compile (lookaround, backreferences) refuses the schema.
A schema that is no JSON Schema, names a `$ref` outside itself or a pattern RE2 refuses is SchemaRefused,
raised before anything is validated with it."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

import re2  # type: ignore[import-untyped]
from jsonschema.exceptions import SchemaError, ValidationError
from jsonschema.protocols import Validator
from jsonschema.validators import extend, validator_for
from referencing import Registry, Resource
from referencing.exceptions import NoSuchResource, Unresolvable
from referencing.jsonschema import DRAFT202012, SchemaRegistry

# keywords whose values are data, not schemas: a `pattern` or `$ref` inside them is no keyword
_DATA_KEYWORDS = frozenset({"const", "enum", "default", "examples"})
_REF_KEYWORDS = ("$ref", "$dynamicRef", "$recursiveRef")
# RE2's memory for one compiled pattern: a pattern that needs more is refused
_RE2_MAX_MEM = 8 << 20


class SchemaRefused(ValueError):
    """The schema cannot be checked safely; the message says why, in a few words."""


def _refuse(uri: str) -> Resource[Any]:
    raise NoSuchResource(ref=uri)  # type: ignore[call-arg]  # nothing is fetched: a `$ref` outside the schema resolves to nothing


@functools.cache
def _options() -> Any:
    options = re2.Options()
    options.log_errors = False  # a refused pattern is told by SchemaRefused, not on stderr
    options.max_mem = _RE2_MAX_MEM
    return options


@functools.lru_cache(maxsize=512)
def _compiled(pattern: str) -> Any:
    try:
        return re2.compile(pattern, _options())
    except re2.error as error:
        reason = error.args[0].decode(errors="replace") if error.args else "not a pattern"
        raise SchemaRefused(
            f"the pattern {pattern[:80]!r} cannot be checked without backtracking: {reason}"
        ) from None


def _search(pattern: str, text: str) -> bool:
    return _compiled(pattern).search(text) is not None


def _pattern(validator: Validator, pattern: str, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and not _search(pattern, instance):
        yield ValidationError(f"{instance[:80]!r} does not match {pattern[:80]!r}")


def _pattern_properties(
    validator: Validator, patterns: dict[str, Any], instance: Any, schema: Any
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if _search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(
    validator: Validator, allowed: Any, instance: Any, schema: Any
) -> Iterator[ValidationError]:
    """jsonschema's own, but with the patternProperties matched by RE2."""
    if not validator.is_type(instance, "object"):
        return
    known, patterns = schema.get("properties", {}), list(schema.get("patternProperties", {}))
    extras = sorted(k for k in instance if k not in known and not any(_search(p, k) for p in patterns))
    if validator.is_type(allowed, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], allowed, path=extra)
    elif not allowed and extras:
        listed = ", ".join(repr(e[:80]) for e in extras[:5])
        yield ValidationError(f"Additional properties are not allowed ({listed} unexpected)")


_SAFE_KEYWORDS = {
    "pattern": _pattern,
    "patternProperties": _pattern_properties,
    "additionalProperties": _additional_properties,
}


@functools.cache
def _safe(cls: type[Validator]) -> type[Validator]:
    made: type[Validator] = extend(cls, _SAFE_KEYWORDS)
    return made


def _walk(node: Any) -> Iterator[tuple[str, Any]]:
    """Every (keyword, value) of the schema's objects, data keywords' values left out."""
    stack, seen = [node], 0
    while stack and seen < 100_000:  # a listing is bounded in size; so is the walk
        current = stack.pop()
        seen += 1
        if isinstance(current, dict):
            for key, value in current.items():
                yield key, value
                if key not in _DATA_KEYWORDS:
                    stack.append(value)
        elif isinstance(current, list):
            stack.extend(current)


def _check_refs(schema: dict[str, Any], registry: SchemaRegistry) -> None:
    resource = Resource.from_contents(schema, default_specification=DRAFT202012)
    base = resource.id() or ""
    resolver = registry.with_resource(base, resource).resolver(base_uri=base)
    for key, value in _walk(schema):
        if key in _REF_KEYWORDS and isinstance(value, str):
            try:
                resolver.lookup(value)
            except Unresolvable:
                raise SchemaRefused(
                    f"its {key} {value[:120]!r} is not within the schema (nothing is fetched)"
                ) from None


def safe_validator(schema: dict[str, Any]) -> Validator:
    """A validator of `schema` that fetches nothing and never backtracks; SchemaRefused where it cannot
    be one."""
    try:
        return _checked(schema)
    except RecursionError:
        raise SchemaRefused("it is nested too deep to be checked") from None


def _checked(schema: dict[str, Any]) -> Validator:
    cls = validator_for(schema)
    try:
        cls.check_schema(schema)
    except SchemaError as error:
        raise SchemaRefused(f"it is not a JSON Schema: {error.message[:200]}") from None
    registry: SchemaRegistry = Registry(retrieve=_refuse)  # type: ignore[call-arg]
    _check_refs(schema, registry)
    keywords = {key for key, _ in _walk(schema)}
    if "patternProperties" in keywords and "unevaluatedProperties" in keywords:
        raise SchemaRefused(
            "unevaluatedProperties beside patternProperties cannot be checked without backtracking"
        )
    for key, value in _walk(schema):
        if key == "pattern" and isinstance(value, str):
            _compiled(value)
        elif key == "patternProperties" and isinstance(value, dict):
            for pattern in value:
                _compiled(pattern)
    validator: Validator = _safe(cls)(schema, registry=registry)
    return validator

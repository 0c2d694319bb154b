"""Update and condition expressions, built by one small helper: every attribute name and value goes in
as a placeholder (no clash with DynamoDB's reserved words), and conditions compose as clauses:

    e = Expression()
    e.all(e.exists("pk"), e.eq("status", "pending"), e.missing("outcome"))
    -> "attribute_exists(#n0) AND #n1 = :v0 AND attribute_not_exists(#n2)"
"""

from __future__ import annotations

from typing import Any

from .items import serialize


class Expression:
    # a plain class: a data class costs every cold start a millisecond or more to make
    def __init__(self) -> None:
        self.names: dict[str, str] = {}
        self.values: dict[str, Any] = {}

    def name(self, attr: str) -> str:
        placeholder = f"#n{len(self.names)}"
        self.names[placeholder] = attr
        return placeholder

    def value(self, attr_value: Any) -> str:
        """A placeholder for an attribute value (already serialized)."""
        placeholder = f":v{len(self.values)}"
        self.values[placeholder] = attr_value
        return placeholder

    # conditions

    def eq(self, attr: str, value: Any) -> str:
        """`attr` equals the plain value `value`."""
        return f"{self.name(attr)} = {self.value(serialize(value))}"

    def exists(self, attr: str = "pk") -> str:
        return f"attribute_exists({self.name(attr)})"

    def missing(self, attr: str = "pk") -> str:
        return f"attribute_not_exists({self.name(attr)})"

    @staticmethod
    def all(*clauses: str) -> str:
        return " AND ".join(clauses)

    @staticmethod
    def any(*clauses: str) -> str:
        return "(" + " OR ".join(clauses) + ")"

    # updates

    def sets(self, attrs: dict[str, Any], *, keep_existing: bool = False) -> str:
        """SET each attribute to its (serialized) value; with `keep_existing`, only where it is missing."""
        parts = []
        for attr, value in attrs.items():
            n, v = self.name(attr), self.value(value)
            parts.append(f"{n} = if_not_exists({n}, {v})" if keep_existing else f"{n} = {v}")
        return "SET " + ", ".join(parts)

    def removes(self, *attrs: str) -> str:
        return "REMOVE " + ", ".join(self.name(a) for a in attrs)

    def apply(self, op: dict[str, Any]) -> dict[str, Any]:
        """`op` with the placeholders this expression used."""
        if self.names:
            op["ExpressionAttributeNames"] = self.names
        if self.values:
            op["ExpressionAttributeValues"] = self.values
        return op


def updated(
    key: dict[str, Any],
    changes: dict[str, Any],
    condition: str,
    e: Expression,
    *,
    keep_existing: bool = False,
) -> dict[str, Any]:
    """An update of the item at `key`: SET `changes` (serialized values), on `condition`."""
    update = e.sets(changes, keep_existing=keep_existing)
    return e.apply({"Key": key, "UpdateExpression": update, "ConditionExpression": condition})


def put_new(item: dict[str, Any]) -> dict[str, Any]:
    """A put of an item that must not exist yet."""
    return {"Item": item, "ConditionExpression": "attribute_not_exists(pk)"}

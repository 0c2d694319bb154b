"""StrandsRunner's strict check of a call's args against its tool's input schema (the JSON Schema of the
Strands tool spec), before the gate decides: no coercion, each problem naming its field."""

from __future__ import annotations

from beam_store import InMemoryStore
from riverbeam.frameworks import StrandsRunner

from tests.support.strands_agents import Desk


def runner() -> StrandsRunner:
    return StrandsRunner(Desk(InMemoryStore()).agent())


def test_args_that_fit_have_no_problem() -> None:
    assert runner().validate_args("pay", {"to": "bob", "amount": 5}) == []


def test_a_string_or_a_bool_for_an_integer_is_no_integer() -> None:
    check = runner().validate_args
    for amount in ("two", "5", True, 2.5):
        [(field, problem)] = check("pay", {"to": "bob", "amount": amount})
        assert field == "amount" and "integer" in problem


def test_a_missing_arg_names_the_args() -> None:
    [(field, problem)] = runner().validate_args("pay", {"to": "bob"})
    assert field == "args" and "'amount' is a required property" in problem


def test_the_fingerprint_names_the_agent_and_hashes_each_tools_schema() -> None:
    made = runner().fingerprint()
    assert made["agent"] == "desk" and sorted(made["tools"]) == ["look_up", "pay", "refund"]
    assert all(len(digest) == 64 for digest in made["tools"].values())

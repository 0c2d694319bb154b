"""One rule for what is decided (issue 34): a tool's args are validated strictly (no coercion of `1` to
`true` nor `"50"` to 50), the policy judges them as their canonical JSON, numbers reach Cedar as numbers
(decimals as Cedar decimals, or refused where Cedar cannot hold them), and a `forbid` whose condition errors
on a call's args denies it, naming that policy (fail closed)."""

from __future__ import annotations

from typing import Any

import pytest
from riverbeam import tool
from riverbeam.policy import Policy

RULES = """\
@id("no-force") forbid (principal, action, resource == Tool::"deploy")
  when { context.args has force && context.args.force == true };
@id("at-most-5") forbid (principal, action, resource == Tool::"deploy")
  when { context.args has replicas && context.args.replicas > 5 };
@id("ratio-cap") forbid (principal, action, resource == Tool::"deploy")
  when { context.args has ratio && context.args.ratio.greaterThan(decimal("0.5")) };
"""


@tool(confirm_required=True)
def deploy(service: str, replicas: int = 1, force: bool = False, ratio: float = 0.0) -> dict[str, Any]:
    """Deploy a service."""
    return {"service": service, "replicas": replicas, "force": force, "ratio": ratio}


def decide(args: dict[str, Any], rules: str = RULES) -> tuple[str, tuple[str, ...]]:
    decision = Policy(rules).decide(tool="deploy", args=args, user_id="u1", confirm_required=True)
    return decision.effect, decision.policy_ids


@pytest.mark.parametrize(
    ("args", "field"),
    [
        ({"service": "web", "force": 1}, "force"),
        ({"service": "web", "force": "true"}, "force"),
        ({"service": "web", "force": "yes"}, "force"),
        ({"service": "web", "replicas": "50"}, "replicas"),
        ({"service": "web", "replicas": 50.0}, "replicas"),
        ({"service": "web", "replicas": " 50"}, "replicas"),
        ({"service": "web", "replicas": True}, "replicas"),
    ],
)
def test_args_a_lax_check_would_coerce_do_not_fit_the_tool(args: dict[str, Any], field: str) -> None:
    assert [f for f, _ in deploy.problems(args)] == [field]
    with pytest.raises(Exception) as refused:
        deploy.invoke(args)
    assert getattr(refused.value, "code", None) == "BEM-332" and field in str(refused.value)
    fitting = {"service": "web", "replicas": 3, "force": False, "ratio": 1}  # an int is a JSON number
    assert deploy.invoke(fitting) == {"service": "web", "replicas": 3, "force": False, "ratio": 1.0}


def test_numbers_reach_cedar_as_numbers() -> None:
    cases = [
        ({"service": "web", "replicas": 50}, ("deny", ("at-most-5",))),  # a Long
        ({"service": "web", "replicas": 5}, ("ask", ("baseline-run",))),
        ({"service": "web", "force": True}, ("deny", ("no-force",))),
        ({"service": "web", "ratio": 0.75}, ("deny", ("ratio-cap",))),  # a decimal
        ({"service": "web", "ratio": 0.25}, ("ask", ("baseline-run",))),
        ({"service": "web", "ratio": -12.0625}, ("ask", ("baseline-run",))),
    ]
    assert [decide(args) for args, _ in cases] == [decided for _, decided in cases]


@pytest.mark.parametrize(
    ("args", "named"),
    [
        ({"service": "web", "replicas": "50"}, "at-most-5"),  # Cedar: `>` on a string is a type error
        ({"service": "web", "replicas": 50.5}, "at-most-5"),  # a decimal is no Long either
        ({"service": "web", "ratio": 1}, "ratio-cap"),  # a Long has no greaterThan
    ],
)
def test_a_forbid_whose_condition_errors_on_the_args_denies_naming_it(
    args: dict[str, Any], named: str
) -> None:
    effect, policy_ids = decide(args)
    assert effect == "deny" and named in policy_ids
    denied = Policy(RULES).decide(tool="deploy", args=args, user_id="u1", confirm_required=True)
    assert named in denied.denial("deploy") and "fails on these args" in denied.denial("deploy")


def test_a_forbid_that_reads_a_missing_attribute_without_has_denies() -> None:
    rule = '@id("no-main") forbid (principal, action, resource) when { context.args.ref == "main" };'
    assert decide({"service": "web"}, rule) == ("deny", ("no-main",))
    assert decide({"ref": "docs/x"}, rule) == ("ask", ("baseline-run",))
    # a permit whose condition errors only fails to permit
    permit = (
        '@id("big-unattended") permit (principal, action == Action::"run_unattended", resource)'
        " when { context.args.replicas > 5 };"
    )
    assert decide({"service": "web", "replicas": "50"}, permit) == ("ask", ("baseline-run",))


@pytest.mark.parametrize(
    ("args", "field"),
    [
        ({"service": "web", "ratio": 0.12345}, "args.ratio"),  # more places than Cedar's decimal has
        ({"service": "web", "ratio": 1e20}, "args.ratio"),  # beyond Cedar's decimal
        ({"service": "web", "replicas": 2**63}, "args.replicas"),  # beyond a Long
        ({"service": "web", "nested": {"list": [1, 2**64]}}, "args.nested.list.1"),
        ({"service": "web", "ratio": float("inf")}, "args.ratio"),
    ],
)
def test_a_number_cedar_cannot_hold_is_refused_naming_the_field(args: dict[str, Any], field: str) -> None:
    with pytest.raises(ValueError, match=field) as refused:
        decide(args)
    assert getattr(refused.value, "field", None) == field

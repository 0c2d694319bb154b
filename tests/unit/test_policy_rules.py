"""Each rule of CONTRACT 10's policy, decided by riverbeam.policy.Policy on Cedar: the baseline, allow /
ask / deny from `run` and `run_unattended`, a forbid winning, groups, the context, the policies named,
a syntax error naming its line, and args that cannot forge Cedar entities."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from riverbeam.policy import Decision, Policy

EXAMPLE = """\
@id("docs-unattended") permit (principal, action == Action::"run_unattended", resource == Tool::"git_push")
  when { context.args.ref like "docs/*" };
@id("no-force") forbid (principal, action, resource == Tool::"git_push")
  when { context.args has force && context.args.force == true };
"""


def push(policy: Policy, args: dict[str, Any], **given: Any) -> Decision:
    return policy.decide(
        tool="git_push", args=args, user_id=given.pop("user_id", "u1"), confirm_required=True, **given
    )


def test_the_baseline_asks_for_a_confirm_required_tool_and_runs_the_rest() -> None:
    baseline = Policy("")
    assert push(baseline, {"ref": "main"}) == Decision("ask", ("baseline-run",))
    assert baseline.decide(tool="list_files", args={}, user_id="u1") == Decision(
        "allow", ("baseline-run-unattended",)
    )


def test_a_permit_of_run_unattended_allows_without_asking() -> None:
    assert push(Policy(EXAMPLE), {"ref": "docs/update"}) == Decision("allow", ("docs-unattended",))


def test_a_call_no_permit_covers_asks() -> None:
    assert push(Policy(EXAMPLE), {"ref": "main"}).effect == "ask"


def test_a_forbid_denies_and_wins_over_a_permit() -> None:
    decision = push(Policy(EXAMPLE), {"ref": "docs/update", "force": True})
    assert decision == Decision("deny", ("no-force",))


def test_a_forbid_of_run_unattended_alone_makes_an_unasked_tool_ask() -> None:
    policy = Policy('@id("ask-reads") forbid (principal, action == Action::"run_unattended", resource);')
    assert policy.decide(tool="read_file", args={"path": "x"}, user_id="u1").effect == "ask"


def test_policies_without_an_id_are_named_by_their_place_in_the_file() -> None:
    policy = Policy(
        'permit (principal, action, resource == Tool::"git_log");\n'
        'forbid (principal, action, resource == Tool::"git_push");\n'
    )
    assert push(policy, {"ref": "main"}) == Decision("deny", ("policy1",))


def test_groups_are_the_users_parents() -> None:
    policy = Policy(
        '@id("admins-push") permit (principal in Group::"admins", action == Action::"run_unattended",'
        ' resource == Tool::"git_push");'
    )
    assert push(policy, {"ref": "main"}, groups=("admins", "dev")).effect == "allow"
    assert push(policy, {"ref": "main"}, groups=("dev",)).effect == "ask"
    assert push(policy, {"ref": "main"}).effect == "ask"


def test_the_context_names_the_agent_and_the_session() -> None:
    policy = Policy(
        '@id("reviewer-never-pushes") forbid (principal, action, resource == Tool::"git_push")'
        ' when { context.agent == "reviewer" };\n'
        '@id("demo-session") permit (principal, action == Action::"run_unattended", resource)'
        ' when { context.session_id == "s-demo" };'
    )
    assert push(policy, {"ref": "main"}, agent="reviewer").effect == "deny"
    assert push(policy, {"ref": "main"}, agent="author", session_id="s-demo").effect == "allow"
    assert push(policy, {"ref": "main"}, agent="author", session_id="other").effect == "ask"


def test_a_user_id_of_any_characters_is_the_principal() -> None:
    odd = 'a "quoted"\nuser\\'
    policy = Policy('@id("odd") forbid (principal == User::"a \\"quoted\\"\\nuser\\\\", action, resource);')
    assert push(policy, {"ref": "main"}, user_id=odd).effect == "deny"
    assert push(policy, {"ref": "main"}, user_id="someone").effect == "ask"


def test_args_cannot_forge_an_entity() -> None:
    policy = Policy(
        '@id("admin-args") permit (principal, action == Action::"run_unattended", resource)'
        ' when { context.args has who && context.args.who == User::"admin" };'
    )
    forged = {"who": {"__entity": {"type": "User", "id": "admin"}}}
    assert push(policy, forged).effect == "ask"


def test_args_cedar_has_no_value_for_are_still_decided() -> None:
    policy = Policy(
        '@id("no-ratio") forbid (principal, action, resource) when { context.args has ratio };\n'
        '@id("note") forbid (principal, action, resource) when { context.args has note };'
    )
    assert push(policy, {"ratio": 0.5}) == Decision("deny", ("no-ratio",))
    assert push(policy, {"note": None, "list": [1, None, "a"]}).effect == "ask"
    with pytest.raises(ValueError, match=r"args\.big"):  # no Long holds it: refused, never judged as text
        push(policy, {"big": 2**80})


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("permit (principal, action, resource);\n\npermit (principal, actin, resource);", 3, "actin"),
        ("permit (principal, action, resource)\n  when { context.x == };", 2, "`}`"),
        ("// a comment; with a semicolon\npermit (principal, action, resource)\n  when { true }", 3, "end"),
        ('permit (principal, action, resource) when { context.s == "a;b" };\nforbid (principal,', 2, "end"),
    ],
)
def test_a_syntax_error_names_its_line(text: str, line: int, words: str) -> None:
    with pytest.raises(ValueError, match=f"^line {line}: .*{words}"):
        Policy(text)


def test_a_file_that_does_not_parse_is_named_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "author.cedar"
    path.write_text(EXAMPLE + "permit (principal, action, resource) when { context.args.ref like 3 };\n")
    with pytest.raises(ValueError, match=f"^{path}, line 5: .*like"):
        Policy.from_file(path)


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"absent\.cedar: cannot read"):
        Policy.from_file(tmp_path / "absent.cedar")


def test_templates_are_refused() -> None:
    with pytest.raises(ValueError, match="templates"):
        Policy("permit (principal == ?principal, action, resource);")


def test_a_file_is_parsed_once_and_decides_the_same_each_time(tmp_path: Path) -> None:
    path = tmp_path / "author.cedar"
    path.write_text(EXAMPLE)
    policy = Policy.from_file(path)
    path.write_text("this no longer parses")
    assert [push(policy, {"ref": "docs/a"}).effect for _ in range(3)] == ["allow"] * 3


def test_a_decision_alone_does_not_import_cedar() -> None:
    probe = (
        "import sys, riverbeam; from riverbeam.policy import Decision; "
        "print('cedarpy' in sys.modules, 'riverbeam.policy.cedar' in sys.modules)"
    )
    found = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert found.stdout.split() == ["False", "False"]

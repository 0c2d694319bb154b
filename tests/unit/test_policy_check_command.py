"""`riverbeam policy check`: the decision and the policies that made it, for a call tried against a policy
file; a file that does not parse, or args that are not a JSON object, is told on stderr (exit 2)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from riverbeam_local.clients.policy_check import check

EXAMPLE = """\
@id("docs-unattended") permit (principal, action == Action::"run_unattended", resource == Tool::"git_push")
  when { context.args.ref like "docs/*" };
@id("no-force") forbid (principal, action, resource == Tool::"git_push")
  when { context.args has force && context.args.force == true };
@id("admins-main") permit (principal in Group::"admins", action == Action::"run_unattended",
  resource == Tool::"git_push") when { context.args.ref == "main" };
"""


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = check(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def policy_file(tmp_path: Path) -> str:
    path = tmp_path / "author.cedar"
    path.write_text(EXAMPLE)
    return str(path)


@pytest.mark.parametrize(
    ("args", "groups", "decision", "policies"),
    [
        ('{"ref": "docs/update"}', [], "allow", "docs-unattended"),
        ('{"ref": "main"}', [], "ask", "baseline-run"),
        ('{"ref": "main"}', ["--group", "admins"], "allow", "admins-main"),
        ('{"ref": "docs/update", "force": true}', [], "deny", "no-force"),
    ],
)
def test_it_prints_the_decision_and_the_policies(
    policy_file: str, args: str, groups: list[str], decision: str, policies: str
) -> None:
    code, out, err = run(policy_file, "--tool", "git_push", "--args", args, "--user", "ana", *groups)
    assert (code, err) == (0, "")
    assert out.splitlines() == [f"decision: {decision}", f"policies: {policies}"]


def test_a_tool_that_does_not_ask_by_itself_runs_under_the_baseline(policy_file: str) -> None:
    code, out, _ = run(policy_file, "--tool", "list_files", "--confirm-required", "false")
    assert code == 0
    assert out.splitlines()[0] == "decision: allow"


def test_a_file_that_does_not_parse_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.cedar"
    path.write_text(EXAMPLE + "forbid (principal, action, resource\n")
    code, out, err = run(str(path), "--tool", "git_push")
    assert (code, out) == (2, "")
    assert f"{path}, line 7:" in err


def test_args_that_are_not_a_json_object_are_refused(policy_file: str) -> None:
    code, out, err = run(policy_file, "--tool", "git_push", "--args", "[1, 2]")
    assert (code, out) == (2, "")
    assert "--args must be a JSON object" in err


def test_the_riverbeam_command_runs_it(policy_file: str, capsys: pytest.CaptureFixture[str]) -> None:
    from riverbeam_local.command import main

    assert main(["policy", "check", policy_file, "--tool", "git_push", "--args", '{"ref": "docs/a"}']) == 0
    assert capsys.readouterr().out.splitlines() == ["decision: allow", "policies: docs-unattended"]
    assert main(["policy"]) == 2  # its one subcommand is check
    assert "usage: riverbeam policy check FILE" in capsys.readouterr().err


def test_a_policy_id_hiding_control_characters_is_printed_escaped(tmp_path: Path) -> None:
    path = tmp_path / "shared.cedar"
    path.write_text('@id("ok\\u{1b}[2J\\u{202e}") permit (principal, action, resource);\n')
    code, out, err = run(str(path), "--tool", "git_push")
    assert (code, err) == (0, "")
    assert "\x1b" not in out and "\u202e" not in out
    assert "policies: ok\\x1b[2J\\u202e" in out


def test_a_number_cedar_cannot_hold_is_told_naming_its_field(policy_file: str) -> None:
    code, out, err = run(policy_file, "--tool", "git_push", "--args", '{"ref": "main", "ratio": 0.12345}')
    assert (code, out) == (2, "") and "Traceback" not in err
    assert err.startswith("riverbeam policy check: args.ratio: ") and err.count("\n") == 1

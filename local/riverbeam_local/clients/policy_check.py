"""`riverbeam policy check FILE --tool T --args JSON [--user U] [--group G ...]`: what an agent's policy
file decides for one tool call, and the policies that decided it, so a rule can be tried before it is
deployed. Exit 0 with the decision; a file that does not parse, or args that are not a JSON object: the
error on stderr and exit 2."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, TextIO

from ..display import visible


def parser() -> argparse.ArgumentParser:
    found = argparse.ArgumentParser(
        prog="riverbeam policy check",
        description="Decide one tool call with a Cedar policy file (plus Riverbeam's baseline): "
        "allow (runs unasked), ask (waits for a person) or deny (never runs).",
    )
    found.add_argument("file", help="the agent's .cedar policy file")
    found.add_argument("--tool", required=True, help="the tool's name, e.g. git_push")
    found.add_argument("--args", default="{}", help="the call's args as a JSON object (default {})")
    found.add_argument("--user", default="user", help='the session\'s owner (principal User::"U")')
    found.add_argument(
        "--group", action="append", default=[], help='a group of the user (Group::"G"); repeat for more'
    )
    found.add_argument("--agent", default="author", help="the agent's name (context.agent)")
    found.add_argument("--session", default="", help="the session id (context.session_id)")
    found.add_argument(
        "--confirm-required",
        choices=("true", "false"),
        default="true",
        help="whether the tool asks for approval by itself (context.confirm_required; default true)",
    )
    return found


def _args(text: str) -> dict[str, Any]:
    try:
        found = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"--args is not JSON: {error}") from None
    if not isinstance(found, dict):
        raise ValueError("--args must be a JSON object")
    return found


def check(argv: list[str], out: TextIO | None = None, err: TextIO | None = None) -> int:
    out, err = out or sys.stdout, err or sys.stderr
    options = parser().parse_args(argv)
    from riverbeam.policy import Policy  # Cedar is loaded by this command alone

    try:
        args = _args(options.args)
        policy = Policy.from_file(options.file)
        decision = policy.decide(  # args holding a number Cedar cannot read are a ValueError naming it
            tool=options.tool,
            args=args,
            user_id=options.user,
            groups=options.group,
            agent=options.agent,
            confirm_required=options.confirm_required == "true",
            session_id=options.session,
        )
    except ValueError as error:
        print(f"riverbeam policy check: {visible(str(error), lines=True)}", file=err)
        return 2
    print(f"decision: {decision.effect}", file=out)
    # a policy's @id is any Cedar string: a shared file's may hide control characters
    print(f"policies: {visible(', '.join(decision.policy_ids)) or '(none)'}", file=out)
    return 0


def main(argv: list[str]) -> int:
    """`riverbeam policy ...`: `check` is its one subcommand."""
    usage = "usage: riverbeam policy check FILE --tool T [--args JSON] [--user U] [--group G]"
    if argv[:1] in (["-h"], ["--help"]):  # asked for: help on stdout, exit 0
        print(f"{usage}\n\nriverbeam policy check --help says more.", file=sys.stdout)
        return 0
    if argv[:1] != ["check"]:
        print(usage, file=sys.stderr)
        return 2
    return check(argv[1:])

"""`riverbeam approvals`: the approvals a person may answer, across sessions, as JSON for scripts; and
what `riverbeam resume` prints where the person answering is an approver rather than the session's owner
(who alone may follow its frames)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from .client import ApiClient, Json

# pages read at most by --all (100 actions a page): a bound, whatever the server answers
MAX_PAGES = 100


def add_group_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--group",
        action="append",
        default=[],
        metavar="GROUP",
        help="a group you belong to (repeat it; AuthMode none: the stack trusts what you say)",
    )


def add_approvals_command(commands: Any) -> argparse.ArgumentParser:
    listed: argparse.ArgumentParser = commands.add_parser(
        "approvals", help="print the pending actions you may answer, across sessions"
    )
    listed.add_argument("--limit", type=int, default=50, help="actions a page, 1..100 (default: %(default)s)")
    listed.add_argument("--cursor", help="the next_cursor of the page before")
    listed.add_argument("--all", action="store_true", help="every page, not the first only")
    add_group_option(listed)
    return listed


def approvals(api: ApiClient, args: argparse.Namespace, show: Callable[[Any], None]) -> None:
    """One page (or, with --all, every page) of the caller's inbox as one JSON document."""
    page = api.approvals(limit=args.limit, cursor=args.cursor)
    actions = list(page.get("actions", []))
    for _ in range(MAX_PAGES - 1):
        if not (args.all and page.get("next_cursor")):
            break
        page = api.approvals(limit=args.limit, cursor=page["next_cursor"])
        actions += page.get("actions", [])
    show({"actions": actions, "next_cursor": page.get("next_cursor")})


def answered_as_approver(api: ApiClient, action: Json, envelope: Json, show: Callable[[Any], None]) -> None:
    """An approver's answer: the StreamAck of the run it started, or the votes the action has so far
    (202 with `pending`). The session is another person's: its frames are theirs to follow."""
    show(api.resume(action, [envelope]))

"""The scriptable clients of a running stack: `riverbeam invoke`, `resume`, `get`, `frames` and
`approvals` print JSON (one document, or one frame per line); a refusal prints the API's error JSON on
stderr and exits 1, a server out of reach one line on stderr and exit 1, a malformed --url one line and
exit 2. What they print shows control, bidi and invisible characters as escapes (riverbeam_local.display).
`riverbeam chat` is dispatched from here too."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import uuid
from collections.abc import Callable
from typing import Any

from ..display import visible, visible_json
from . import approver_commands
from .approver_commands import add_approvals_command, add_group_option, answered_as_approver
from .client import RECORD_PATHS, ApiClient, ApiError, ClientError, Json, response
from .options import add_connection_options, api_client, url_problem
from .subscription import Subscription


def _print_json(document: Any) -> None:
    # non-ASCII text as it is, every control, bidi or invisible character as JSON's \u escape: a terminal
    # shows what the value holds, and a script parses the same value
    print(visible_json(document, indent=2), flush=True)


def _print_frame(frame: Json) -> None:
    print(visible_json(frame), flush=True)


async def stream_run(api: ApiClient, session_id: str, start: Callable[[], Json], after: int = -1) -> None:
    """Subscribe to the session, then `start` the run (a blocking call answering a StreamAck or a run) and
    print its frames up to `done`."""
    async with Subscription(api, session_id) as subscription:
        run = await asyncio.to_thread(start)
        async for frame in subscription.follow(run["run_id"], after):
            _print_frame(frame)


def invoke(api: ApiClient, args: argparse.Namespace) -> None:
    session_id = args.session or str(uuid.uuid4())

    def call() -> Json:
        return api.invoke(
            args.text,
            session_id=session_id,
            agent=args.agent,
            interaction_id=args.interaction,
            stream=args.stream,
        )

    if args.stream:
        asyncio.run(stream_run(api, session_id, call))
    else:
        _print_json(call())


def resume(api: ApiClient, args: argparse.Namespace) -> None:
    action = api.get("action", args.approve or args.reject)
    envelope = response(action, approve=bool(args.approve), reason=args.reason, grant=args.grant)
    if not api.is_me(action.get("user_id")):  # an approver of another's session: no frames to follow
        answered_as_approver(api, action, envelope, _print_json)
        return
    asyncio.run(stream_run(api, action["session_id"], lambda: api.resume(action, [envelope])))


def approvals(api: ApiClient, args: argparse.Namespace) -> None:
    approver_commands.approvals(api, args, _print_json)


def get(api: ApiClient, args: argparse.Namespace) -> None:
    _print_json(api.get(args.kind, args.id))


def grants(api: ApiClient, args: argparse.Namespace) -> None:
    _print_json(api.grants(args.session_id))


def revoke(api: ApiClient, args: argparse.Namespace) -> None:
    api.revoke_grant(args.session_id, args.grant_id)  # 204: nothing to print


def frames(api: ApiClient, args: argparse.Namespace) -> None:
    # a run seen ended has stored every frame: --follow has nothing to wait for
    run = api.get("run", args.run_id) if args.follow else None
    if run is None or run.get("status") != "running":
        for frame in api.frames(args.run_id, args.after):
            _print_frame(frame)
        return
    asyncio.run(stream_run(api, run["session_id"], lambda: run, args.after))


def _commands(parser: argparse.ArgumentParser) -> None:
    found = parser.add_subparsers(dest="command", required=True)
    run = found.add_parser("invoke", help="send a message; print the Result, or the frames (--stream)")
    run.add_argument("--text", "-t", required=True, help="the message")
    run.add_argument("--agent", default="author", help="the agent (default: %(default)s)")
    run.add_argument("--session", help="the session (default: a new one)")
    run.add_argument("--interaction", help="the interaction to continue (default: a new one)")
    run.add_argument("--stream", action="store_true", help="print the run's frames, one a line, to done")
    answer = found.add_parser("resume", help="approve or reject an action; print the frames that follow")
    which = answer.add_mutually_exclusive_group(required=True)
    which.add_argument("--approve", metavar="ACTION_ID", help="run the action's tool with its stored args")
    which.add_argument("--reject", metavar="ACTION_ID", help="refuse it: the tool does not run")
    answer.add_argument("--reason", help="why it is refused (with --reject)")
    answer.add_argument(
        "--grant", choices=("tool", "args"), help="with --approve: always allow the tool (or these args) here"
    )
    read = found.add_parser("get", help="print a record as JSON")
    read.add_argument("kind", choices=list(RECORD_PATHS), help="messages: a session's messages")
    read.add_argument("id")
    replay = found.add_parser("frames", help="print a run's frames, one JSON a line")
    replay.add_argument("run_id")
    replay.add_argument("--after", type=int, default=-1, metavar="N", help="only frames after frame_seq N")
    replay.add_argument(
        "--follow",
        action="store_true",
        help="wait for the run's frames until it is done (an ended run's at once)",
    )
    granted = found.add_parser("grants", help="print a session's standing grants as JSON")
    granted.add_argument("session_id")
    revoking = found.add_parser("revoke", help="revoke a standing grant: the session's calls ask again")
    revoking.add_argument("session_id")
    revoking.add_argument("grant_id")
    listed = add_approvals_command(found)
    for command in (answer, read):
        add_group_option(command)
    for command in (run, answer, read, replay, listed, granted, revoking):
        add_connection_options(command)


COMMANDS: dict[str, Callable[[ApiClient, argparse.Namespace], None]] = {
    "invoke": invoke,
    "resume": resume,
    "get": get,
    "frames": frames,
    "approvals": approvals,
    "grants": grants,
    "revoke": revoke,
}


def main(argv: list[str]) -> int:
    if argv[:1] == ["chat"]:
        from .chat import main as chat

        return chat(argv[1:])
    parser = argparse.ArgumentParser(prog="riverbeam", description="Riverbeam's API from the command line")
    _commands(parser)
    args = parser.parse_args(argv)
    if args.command == "resume" and args.approve and args.reason is not None:
        said = "riverbeam resume: --reason goes with --reject (an approval carries no reason)"
        print(said, file=sys.stderr)
        return 2
    problem = url_problem(args.url)
    if problem:  # a usage error, as argparse's are: exit 2
        print(f"riverbeam {args.command}: {problem}", file=sys.stderr)
        return 2
    try:
        groups = tuple(getattr(args, "group", ()))
        api = api_client(args, groups)
        COMMANDS[args.command](api, args)
    except ApiError as error:
        print(error.json(), file=sys.stderr)
        return 1
    except ClientError as error:
        print(f"riverbeam {args.command}: {visible(error.line())}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"riverbeam {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (| head): nothing more to say, nor at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    return 0

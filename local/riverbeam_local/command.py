"""The `riverbeam` command. Its subcommands are developer tooling, kept outside the Lambda layer's imports:
each is imported from riverbeam_local only when it is run (prompt_toolkit, rich, uvicorn and websockets are
never loaded by the deployed functions)."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from importlib import metadata

COMMANDS = {
    "dev": "the local stack on 127.0.0.1 (HTTP, WebSocket, management API)",
    "demo": "the approval loop through the local stack: ask, approve, push, refuse",
    "chat": "talk to an agent of a running stack and answer its approvals",
    "invoke": "send a message to an agent; print its Result (or, with --stream, its frames) as JSON",
    "resume": "approve or reject an action by id; print the frames of the run that follows",
    "get": "print a session, interaction, run, action or a session's messages as JSON",
    "frames": "print a run's frames, one JSON per line (--follow: until it is done)",
    "policy": "policy check FILE --tool T --args JSON: what an approval policy decides for one call",
    "approvals": "print the pending actions you may answer, across sessions, as JSON",
    "grants": "grants SESSION: print a session's standing grants (always allow) as JSON",
    "revoke": "revoke SESSION GRANT: revoke a standing grant; the session's calls ask again",
    "login": "login --url URL: sign in to a stack's user pool (AuthMode jwt) for the clients",
    "trace": "print a run's spans as a tree with timings (kept by dev --traces)",
}


def ctrl_c_interrupts() -> None:
    """Ctrl-C stops a command even where it was started with SIGINT ignored (a background job of a
    non-interactive shell, nohup: a child inherits the ignored signal), as KeyboardInterrupt."""
    ignored = signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    if ignored and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)


def version() -> str:
    """The installed `riverbeam` distribution's version."""
    try:
        return metadata.version("riverbeam")
    except metadata.PackageNotFoundError:  # run from a clone that was never installed
        return "unknown (not installed)"


def parser() -> argparse.ArgumentParser:
    found = argparse.ArgumentParser(
        prog="riverbeam",
        description="Riverbeam: agents that ask before they act",
        epilog="`riverbeam COMMAND --help` gives a command's options.",
    )
    found.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    commands = found.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, text in COMMANDS.items():
        commands.add_parser(name, add_help=False, help=text)
    return found


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    command = argv[0] if argv else None
    if command in COMMANDS:
        ctrl_c_interrupts()
    if command == "dev":
        from riverbeam_local.stack.dev_command import main as dev

        return dev(argv[1:])
    if command == "trace":
        from riverbeam_local.clients.trace_tree import main as trace

        return trace(argv[1:])
    if command == "demo":
        from riverbeam_local.clients.demo import main as demo

        return demo(argv[1:])
    if command == "login":
        from riverbeam_local.clients.cognito import main as login

        return login(argv[1:])
    if command == "policy":  # needs no stack: Cedar on this machine
        from riverbeam_local.clients.policy_check import main as policy

        return policy(argv[1:])
    if command in COMMANDS:
        from riverbeam_local.clients.commands import main as client

        return client(argv)
    if not argv:  # no command: the whole help, though still a usage error (exit 2), as argparse's are
        parser().print_help(sys.stderr)
        return 2
    parser().parse_args(argv)  # --help, --version, or an unknown command (usage and exit 2)
    return 2


if __name__ == "__main__":
    sys.exit(main())

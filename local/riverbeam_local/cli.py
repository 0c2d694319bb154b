"""`riverbeam dev [--port P] [--data-dir D]`: the local stack's command line."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from .stack_secret import DEFAULT_DATA_DIR, SECRET_VARIABLE

DEFAULT_PORT = 3000
# how often the local stack runs the sweep (the template's SweepSchedule is a minute)
DEFAULT_SWEEP_SECONDS = 30.0


def parser() -> argparse.ArgumentParser:
    found = argparse.ArgumentParser(
        prog="riverbeam dev",
        description="Riverbeam's HTTP API, WebSocket API and management API on 127.0.0.1, routed to the "
        "handlers of functions/ as template.yaml declares them, with an embedded DynamoDB and SQS "
        "(unless AWS_ENDPOINT_URL_DYNAMODB / AWS_ENDPOINT_URL_SQS name others) and AuthMode none. Every "
        f"API request must carry the stack's secret: ${SECRET_VARIABLE} where set, else a random one kept in "
        "the data dir's `secret` file; the page's URL printed at start carries it.",
    )
    found.add_argument(
        "--port",
        type=int,
        default=DEFAULT_PORT,
        help="the port on 127.0.0.1 (default: %(default)s; 0: any free one)",
    )
    found.add_argument(
        "--data-dir",
        type=Path,
        default=DEFAULT_DATA_DIR,
        help="where the records, the secret, the author agent's work tree and its bare remote are kept "
        "(default: %(default)s)",
    )
    found.add_argument(
        "--model",
        choices=["offline", "bedrock"],
        default="offline",
        help="offline: the offline models, no account needed (default); bedrock: the models agents.yaml "
        "names, on Amazon Bedrock with this machine's AWS credentials and region",
    )
    found.add_argument(
        "--agents",
        type=Path,
        default=None,
        metavar="FILE",
        help="the agents file (default: the repository's agents.yaml)",
    )
    found.add_argument(
        "--sweep-seconds",
        type=float,
        default=DEFAULT_SWEEP_SECONDS,
        metavar="S",
        help="how often the sweep expires the pending actions past their time (default: %(default)s)",
    )
    return found


def _logging() -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(message)s", "%H:%M:%S"))
    log = logging.getLogger("riverbeam_local")
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if not 0 <= args.port <= 65535:
        print(f"riverbeam dev: --port {args.port} is not a port number", file=sys.stderr)
        return 2
    if not 0 < args.sweep_seconds <= 86400:
        print(f"riverbeam dev: --sweep-seconds {args.sweep_seconds} is not in (0, 86400]", file=sys.stderr)
        return 2
    _logging()
    from .server import StartError, run

    try:
        return run(
            args.port,
            args.data_dir,
            model=args.model,
            agents_file=args.agents,
            sweep_seconds=args.sweep_seconds,
        )
    except StartError as error:
        print(f"riverbeam dev: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # stopped before it was serving: nothing to say
        return 0

"""Soak the concurrency promises: as many trials as asked of the suite's three races, with figures.

    .venv/bin/python bench/soak_concurrency.py                     # 20 trials of each, embedded server
    .venv/bin/python bench/soak_concurrency.py --trials 200 --store all
    .venv/bin/python bench/soak_concurrency.py --trials 2 --messages 5   # what CI runs

The races (tests/support/concurrency.py, the same code the suite runs a few trials of):
  resumes        --threads resumes of one pending action at once: one wins, the others get BEM-066, the
                 tool runs once, no loser leaves a run behind
  writers        --writers threads appending --messages messages each to one session: seqs exactly 1..N,
                 each writer's messages in its order
  first-invokes  --users users invoking one new session at once: one owner, the others get BEM-031
Every promise is checked in every trial; the first broken one stops the run (exit status 1). Stores:
`server` is DynamoBeamStore on the embedded server (started here, on 127.0.0.1), `moto` on moto in
process (requests serialized), `memory` InMemoryStore. Each writers trial is a new session.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
# before riverbeam is imported (its logger reads it once): one line per race, not one per step
os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")

if TYPE_CHECKING:
    from beam_store import BeamStore

    from tests.support.concurrency import Figures

STORES = ("server", "moto", "memory")
SCENARIOS = ("resumes", "writers", "first-invokes")


@contextmanager
def open_store(kind: str) -> Iterator[tuple[BeamStore, str]]:
    from beam_store import InMemoryStore
    from beam_store.embedded import embedded_dynamodb

    from tests.support.stores import moto_store, server_store

    if kind == "memory":
        yield InMemoryStore(), "InMemoryStore"
    elif kind == "moto":
        with moto_store() as store:
            yield store, "DynamoBeamStore on moto (in process, serialized)"
    else:
        with embedded_dynamodb() as url:
            yield server_store(url), f"DynamoBeamStore on the embedded server at {url}"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__,
    )
    parser.add_argument("--trials", type=int, default=20, help="trials of each race (default: %(default)s)")
    parser.add_argument("--store", choices=(*STORES, "all"), default="server", help="default: %(default)s")
    parser.add_argument("--scenario", choices=(*SCENARIOS, "all"), default="all", help="default: %(default)s")
    parser.add_argument("--threads", type=int, default=16, help="resumes per race (default: %(default)s)")
    parser.add_argument("--writers", type=int, default=8, help="writers per session (default: %(default)s)")
    parser.add_argument("--messages", type=int, default=25, help="messages per writer (default: %(default)s)")
    parser.add_argument(
        "--users", type=int, default=4, help="first invokers per session (default: %(default)s)"
    )
    args = parser.parse_args()
    if min(args.trials, args.threads, args.writers, args.messages, args.users) < 1:
        parser.error("every count must be at least 1")

    # no AWS account is reached: fake credentials, one region, no endpoint from the environment
    os.environ.update(AWS_ACCESS_KEY_ID="soak", AWS_SECRET_ACCESS_KEY="soak", AWS_DEFAULT_REGION="us-east-1")
    for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB"):
        os.environ.pop(name, None)
    from tests.support.concurrency import (
        first_invokes_of_a_new_session,
        resumes_of_one_action,
        writers_to_one_session,
    )

    races: dict[str, Callable[[BeamStore], Figures]] = {
        "resumes": lambda store: resumes_of_one_action(store, args.trials, threads=args.threads),
        "writers": lambda store: writers_to_one_session(
            store, args.trials, writers=args.writers, messages=args.messages
        ),
        "first-invokes": lambda store: first_invokes_of_a_new_session(store, args.trials, users=args.users),
    }
    chosen = SCENARIOS if args.scenario == "all" else (args.scenario,)
    for kind in STORES if args.store == "all" else (args.store,):
        with ExitStack() as stack:
            store, label = stack.enter_context(open_store(kind))
            print(f"store: {label}", flush=True)
            for name in chosen:
                try:
                    figures = races[name](store)
                except AssertionError as broken:
                    print(f"{name}: PROMISE BROKEN: {broken}", flush=True)
                    return 1
                print(figures.line(), flush=True)
    print("every promise held in every trial")
    return 0


if __name__ == "__main__":
    sys.exit(main())

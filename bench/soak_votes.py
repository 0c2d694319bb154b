"""Soak the quorum's promise: approvers voting on one action at once, as many trials as asked, with figures.

    .venv/bin/python bench/soak_votes.py              # 50 trials, 8 voters, quorum 3, embedded server
    .venv/bin/python bench/soak_votes.py --trials 200 --store all
    .venv/bin/python bench/soak_votes.py --voters 16 --required 2

Each trial: a new pending git_push whose tool needs --required approvals of --voters approvers, and every
approver approves it at once (tests/support/vote_races.py, the code the suite runs three trials of). In
every trial exactly --required - 1 votes are recorded without a run, exactly one resolves the action and
its tool runs once, the others get BEM-066, and the action keeps exactly --required votes. The first broken
promise stops the run (exit status 1). Stores as in bench/soak_concurrency.py: `server` (the embedded
DynamoDB-compatible server, started here on 127.0.0.1), `moto` (in process, serialized), `memory`.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
# before riverbeam is imported (its logger reads it once): one line per race, not one per step
os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")

STORES = ("server", "moto", "memory")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__,
    )
    parser.add_argument("--trials", type=int, default=50, help="default: %(default)s")
    parser.add_argument(
        "--voters", type=int, default=8, help="approvers voting at once (default: %(default)s)"
    )
    parser.add_argument("--required", type=int, default=3, help="the quorum (default: %(default)s)")
    parser.add_argument("--store", choices=(*STORES, "all"), default="server", help="default: %(default)s")
    args = parser.parse_args()
    if min(args.trials, args.voters, args.required) < 1 or args.required > args.voters:
        parser.error("every count must be at least 1, and --required at most --voters")

    # no AWS account is reached: fake credentials, one region, no endpoint from the environment
    os.environ.update(AWS_ACCESS_KEY_ID="soak", AWS_SECRET_ACCESS_KEY="soak", AWS_DEFAULT_REGION="us-east-1")
    for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB"):
        os.environ.pop(name, None)
    from soak_concurrency import open_store

    from tests.support.vote_races import votes_on_one_action

    for kind in STORES if args.store == "all" else (args.store,):
        with open_store(kind) as (store, label):
            print(f"store: {label}", flush=True)
            try:
                figures = votes_on_one_action(store, args.trials, voters=args.voters, required=args.required)
            except AssertionError as broken:
                print(f"PROMISE BROKEN: {broken}", flush=True)
                return 1
            print(figures.line(), flush=True)
    print("every promise held in every trial")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A Query's time on the embedded DynamoDB server as its table grows: flat is the goal.

    .venv/bin/python bench/embedded_query.py                       # 100 and 10,000 items, 200 Queries each
    .venv/bin/python bench/embedded_query.py --sizes 100,1000 --repeat 20

For each size it starts `python -m beam_store.embedded` (a process of its own), makes the store's table
(its four indexes), fills it to that many items with BatchWriteItem (sessions of 10 messages; every fifth
item also in gsi1 under an interaction of 4 items), then times, over HTTP with boto3 as the store sends
them, the Query of one session's 10 messages (the table's partition) and the Query of one interaction's 4
items (gsi1's partition), the sizes' servers all running and their Queries interleaved (a busy moment on the
machine slows every size alike), and prints their medians, p90 and the ratio of the largest size's
median to the smallest's. The conditions (date, load average, Python) come first.
"""

from __future__ import annotations

import argparse
import functools
import os
import platform
import statistics
import sys
import time
import uuid
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import boto3
from beam_store.dynamo.table import TABLE_DEFINITION
from beam_store.embedded import embedded_dynamodb

SESSION_ITEMS = 10  # a session's partition: what the table's Query reads
INTERACTION_ITEMS = 4  # an interaction's gsi1 partition: what the index's Query reads
BATCH = 25


def _item(n: int) -> dict[str, Any]:
    """The n-th item: session n // 10, message n % 10; every fifth also in gsi1."""
    session, seq = divmod(n, SESSION_ITEMS)
    item: dict[str, Any] = {
        "pk": {"S": f"SESSION#{session:06d}"},
        "sk": {"S": f"MSG#{seq:012d}"},
        "content": {"S": "x" * 200},
    }
    if n % 5 == 0:
        item["gsi1pk"] = {"S": f"INTERACTION#{n // (5 * INTERACTION_ITEMS):06d}"}
        item["gsi1sk"] = {"S": f"RUN#{n:08d}"}
    return item


def fill(client: Any, table: str, count: int) -> None:
    for start in range(0, count, BATCH):
        requests = [{"PutRequest": {"Item": _item(n)}} for n in range(start, min(count, start + BATCH))]
        pending: dict[str, Any] = {table: requests}
        while pending:
            pending = client.batch_write_item(RequestItems=pending).get("UnprocessedItems") or {}


def _timed(call: Any, expected: int) -> float:
    began = time.perf_counter()
    answer = call()
    elapsed = time.perf_counter() - began
    if answer["Count"] != expected:  # a fast wrong answer is no figure
        raise SystemExit(f"a Query returned {answer['Count']} items, not {expected}")
    return elapsed


@dataclass
class Table:
    """A table of `size` items on an embedded server of its own."""

    size: int
    client: Any
    name: str = field(default_factory=lambda: f"bench-{uuid.uuid4().hex[:8]}")
    times: dict[str, list[float]] = field(default_factory=lambda: {"table": [], "gsi1": []})

    def query_once(self, i: int) -> None:
        """The i-th Query of each kind, timed (seconds)."""
        session = f"SESSION#{(i * 7919) % (self.size // SESSION_ITEMS):06d}"
        interaction = f"INTERACTION#{(i * 7919) % (self.size // (5 * INTERACTION_ITEMS)):06d}"
        table_query = functools.partial(
            self.client.query,
            TableName=self.name,
            KeyConditionExpression="pk = :pk AND begins_with(sk, :msg)",
            ExpressionAttributeValues={":pk": {"S": session}, ":msg": {"S": "MSG#"}},
            ConsistentRead=True,
        )
        index_query = functools.partial(
            self.client.query,
            TableName=self.name,
            IndexName="gsi1",
            KeyConditionExpression="gsi1pk = :pk",
            ExpressionAttributeValues={":pk": {"S": interaction}},
        )
        self.times["table"].append(_timed(table_query, SESSION_ITEMS))
        self.times["gsi1"].append(_timed(index_query, INTERACTION_ITEMS))


def measure(sizes: list[int], repeat: int) -> list[Table]:
    """Every size's table filled, then their Queries interleaved: a busy moment slows each size alike."""
    with ExitStack() as servers:
        tables = []
        for size in sizes:
            client = boto3.client(
                "dynamodb",
                endpoint_url=servers.enter_context(embedded_dynamodb()),
                region_name="us-east-1",
                aws_access_key_id="testing",  # the embedded server takes any
                aws_secret_access_key="testing",
            )
            table = Table(size, client)
            client.create_table(TableName=table.name, **TABLE_DEFINITION)
            fill(client, table.name, size)
            tables.append(table)
        for i in range(repeat):
            for table in tables:
                table.query_once(i)
        return tables


def _ms(values: list[float], quantile: float) -> float:
    ordered = sorted(values)
    return 1000 * ordered[min(len(ordered) - 1, int(quantile * len(ordered)))]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,10000", help="table sizes in items, comma-separated")
    parser.add_argument("--repeat", type=int, default=200, help="Queries of each kind per size")
    args = parser.parse_args(argv)
    sizes = sorted(int(s) for s in args.sizes.split(","))
    if any(size < 5 * INTERACTION_ITEMS or size % (5 * INTERACTION_ITEMS) for size in sizes):
        parser.error(f"every size must be a multiple of {5 * INTERACTION_ITEMS}")
    print(
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}, "
        f"Python {platform.python_version()}, {args.repeat} Queries of each kind per size"
    )
    tables = measure(sizes, args.repeat)
    for table in tables:
        for kind, values in table.times.items():
            print(
                f"{table.size:>7} items  {kind:<5} Query  median {_ms(values, 0.5):6.2f} ms"
                f"  p90 {_ms(values, 0.9):6.2f} ms"
            )
    for kind in ("table", "gsi1"):
        ratio = statistics.median(tables[-1].times[kind]) / statistics.median(tables[0].times[kind])
        print(f"{kind} Query: {sizes[-1]} items / {sizes[0]} items = {ratio:.2f}x")
    print(f"load at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()

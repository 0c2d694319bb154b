"""Cold start of each Lambda handler beside a bare `import boto3` plus one client, measured side by side.

    python bench/cold_start.py [--rounds N]

Each sample is a fresh interpreter (a cold container) that times, from its first line: importing the
handler module (functions/<name>/app.py with the layer's packages) and its init (the RiverBeam with its
DynamoDB store, the queue and management API clients). The baseline interpreter times `import boto3` and
`boto3.client("dynamodb")`. Samples are interleaved (baseline, each handler, again) so that the machine's
noise falls on all of them alike; the figures are medians, the ratio is handler / baseline.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HANDLERS = ("invoke", "resume", "records", "connections", "worker")

BASELINE = """
import time
started = time.perf_counter()
import boto3
boto3.client("dynamodb")
print(time.perf_counter() - started)
"""

HANDLER = """
import time
started = time.perf_counter()
import importlib.util
spec = importlib.util.spec_from_file_location("app", {path!r})
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
from riverbeam.aws import runtime
runtime.beam(); runtime.sqs(); runtime.management_api()
print(time.perf_counter() - started)
"""


def sample(code: str, env: dict[str, str]) -> float:
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120, check=True
    )
    return float(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="riverbeam-bench-") as data_dir:
        env = dict(
            os.environ,
            AWS_ACCESS_KEY_ID="bench",
            AWS_SECRET_ACCESS_KEY="bench",
            AWS_DEFAULT_REGION="us-east-1",
            TABLE_NAME="riverbeam-bench",
            QUEUE_URL="https://sqs.us-east-1.amazonaws.com/123456789012/riverbeam-bench.fifo",
            WEBSOCKET_ENDPOINT="https://example.execute-api.us-east-1.amazonaws.com/v1",
            RIVERBEAM_DATA_DIR=data_dir,
            POWERTOOLS_SERVICE_NAME="riverbeam",
            POWERTOOLS_METRICS_NAMESPACE="Riverbeam",
        )
        codes = {"boto3 + 1 client": BASELINE} | {
            name: HANDLER.format(path=str(ROOT / "functions" / name / "app.py")) for name in HANDLERS
        }
        for code in codes.values():  # once unmeasured: bytecode compiled, the work tree made
            sample(code, env)
        times: dict[str, list[float]] = {name: [] for name in codes}
        for _ in range(args.rounds):
            for name, code in codes.items():
                times[name].append(sample(code, env))
    baseline = statistics.median(times["boto3 + 1 client"])
    print(f"cold start, median of {args.rounds} fresh interpreters each (Python {sys.version.split()[0]})")
    print(f"{'':<18}{'ms':>8}{'x boto3':>10}")
    for name, samples in times.items():
        median = statistics.median(samples)
        print(f"{name:<18}{median * 1000:>8.1f}{median / baseline:>10.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

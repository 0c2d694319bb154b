"""What a policy decision costs: importing cedarpy, parsing a policy, and the median time of one decision
(the two Cedar requests of a tool call, CONTRACT 10), with the baseline alone and with the example
`author` policy, for calls each policy allows, asks for and denies.

    python bench/policy_decide.py [--calls N]

The import is measured in a fresh interpreter (`python -X importtime` would count the same); decisions in
this one, after a warm-up. Goal: under 1 ms per tool call.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "docs" / "examples" / "policy" / "author.cedar"
CALLS = {
    "docs push": ("git_push", {"ref": "docs/update"}),
    "main push": ("git_push", {"ref": "main"}),
    "force push": ("git_push", {"ref": "docs/update", "force": True}),
}


def import_ms() -> float:
    probe = "import time; t = time.perf_counter(); import cedarpy; print((time.perf_counter() - t) * 1000)"
    runs = [float(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True).stdout)]
    runs += [float(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True).stdout)]
    return min(runs)


def median_us(decide: Callable[[], object], calls: int) -> float:
    times = []
    for _ in range(calls):
        started = time.perf_counter()
        decide()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1e6


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--calls", type=int, default=2000)
    calls = options.parse_args().calls
    print(f"import cedarpy: {import_ms():.1f} ms (fresh interpreter, best of 2)")
    from riverbeam.policy import Policy

    started = time.perf_counter()
    example = Policy.from_file(EXAMPLE)
    print(f"parse {EXAMPLE.relative_to(ROOT)}: {(time.perf_counter() - started) * 1000:.2f} ms")
    for label, policy in (("baseline", Policy("")), ("author example", example)):
        for name, (tool, args) in CALLS.items():
            decide = functools.partial(
                policy.decide, tool=tool, args=args, user_id="ana", groups=("dev",), confirm_required=True
            )
            for _ in range(100):  # warm-up
                decide()
            median = median_us(decide, calls)
            print(f"{label:15} {name:11} {decide().effect:5}: median {median:7.1f} us ({calls} calls)")


if __name__ == "__main__":
    main()

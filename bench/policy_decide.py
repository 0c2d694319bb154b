"""What a policy decision costs: importing cedarpy, parsing a policy, and the median time of one decision
(the two Cedar requests of a tool call, CONTRACT 10), with the baseline alone and with the example
`author` policy, for calls each policy allows, asks for and denies.

    python bench/policy_decide.py [--calls N]

The import, and what an agent with a policy adds to a cold start (riverbeam.Policy imported and the example
parsed; a function whose agents have no policy pays neither), are medians of fresh interpreters; decisions
are timed in this one, after a warm-up. Goal: under 1 ms per tool call.
"""

from __future__ import annotations

import argparse
import functools
import os
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


def fresh_ms(probe: str, rounds: int = 5) -> float:
    """The median of what `probe` prints (ms), each in a fresh interpreter with the sources on its path."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(ROOT / p) for p in ("layers/riverbeam", "store"))}
    runs = [
        float(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env).stdout)
        for _ in range(rounds)
    ]
    return statistics.median(runs)


IMPORT = "import time; t = time.perf_counter(); import cedarpy; print((time.perf_counter() - t) * 1000)"
# what an agent with a policy adds to a cold start: riverbeam.Policy imported, its file read and parsed
# (a function whose agents have no policy does neither); riverbeam.models is loaded first, as every
# function that runs agents has it by then
ADDED = (
    "import time, riverbeam.models; t = time.perf_counter(); from riverbeam import Policy; "
    f"Policy.from_file({str(EXAMPLE)!r}); print((time.perf_counter() - t) * 1000)"
)


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
    print(f"import cedarpy: {fresh_ms(IMPORT):.1f} ms (median of 5 fresh interpreters)")
    print(f"a policy's cold start (import riverbeam.Policy, parse the example): {fresh_ms(ADDED):.1f} ms")
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

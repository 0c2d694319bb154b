"""Each Lambda function's init as Lambda runs it: its app.py loaded by its file in a fresh interpreter on the
layer as the tests build it (conftest: its python/ on the path), and what that init did: whether the
collector runs, what was frozen, which of runtime's clients and agents it made, and every module imported.
The cold-start tests (test_coldstart.py, test_import_budgets.py) all read it from here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FUNCTIONS = tuple(sorted(p.parent.name for p in (ROOT / "functions").glob("*/app.py")))

# run as `python -c PROBE name...`: the functions in turn, one process standing for every container; the
# modules are listed before the probe imports anything of the layer itself
PROBE = """
import gc, importlib.util, json, sys
seen = {}
for name in sys.argv[1:]:
    if "riverbeam.aws.runtime" in sys.modules:
        sys.modules["riverbeam.aws.runtime"].reset()
    spec = importlib.util.spec_from_file_location(f"app_{name}", f"functions/{name}/app.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    modules = sorted(sys.modules)
    from riverbeam.aws import runtime
    made = [f.__name__ for f in (runtime.beam, runtime.sqs, runtime.events_client, runtime.management_api)
            if f.cache_info().currsize]
    if runtime.beam.cache_info().currsize and not runtime.beam()._setup.loaders:
        runners = runtime.beam()._setup.agents
        made.append("agents:" + ",".join(sorted(runners)))
        # agents.yaml's runners make their model on first use: only where init asked for it
        if all(r._model is not None for r in runners.values()):
            made.append("models")
    seen[name] = {"collecting": gc.isenabled(), "frozen": gc.get_freeze_count(),
                  "handler": callable(module.lambda_handler), "made": made, "modules": modules}
print("PROBE " + json.dumps(seen))
"""

# a deployment's settings (no request is made: clients are made without a call)
SETTINGS = {
    "TABLE_NAME": "riverbeam-probe",
    "QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/riverbeam-probe.fifo",
    "EVENT_BUS_NAME": "riverbeam-probe",
    "WEBSOCKET_ENDPOINT": "https://example.execute-api.us-east-1.amazonaws.com/v1",
    "RIVERBEAM_AGENTS_FILE": str(ROOT / "agents.yaml"),
    "RIVERBEAM_MODEL": "offline",
    "AWS_ACCESS_KEY_ID": "probe",
    "AWS_SECRET_ACCESS_KEY": "probe",
}


@dataclass(frozen=True)
class Init:
    """What one function's init left behind."""

    collecting: bool
    frozen: int
    handler: bool
    made: list[str]
    modules: list[str]


def load_functions(names: tuple[str, ...], *, in_lambda: bool, settings: dict[str, str]) -> dict[str, Init]:
    """`names` loaded in turn in one fresh interpreter, with `settings` as the function's environment (and
    AWS_LAMBDA_FUNCTION_NAME where `in_lambda`)."""
    env = {k: v for k, v in os.environ.items() if k != "AWS_LAMBDA_FUNCTION_NAME" and k not in SETTINGS}
    env |= {"PYTHONPATH": os.pathsep.join(sys.path), "AWS_DEFAULT_REGION": "us-east-1", **settings}
    if in_lambda:
        env["AWS_LAMBDA_FUNCTION_NAME"] = "riverbeam-probe"
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *names],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    probed = [line for line in done.stdout.splitlines() if line.startswith("PROBE ")]
    seen: dict[str, dict[str, object]] = json.loads(probed[-1].removeprefix("PROBE "))
    return {name: Init(**report) for name, report in seen.items()}  # type: ignore[arg-type]


def cold_imports(name: str, settings: dict[str, str]) -> set[str]:
    """The modules function `name`'s init imports in Lambda, alone in its interpreter (a cold container)."""
    return set(load_functions((name,), in_lambda=True, settings=settings)[name].modules)

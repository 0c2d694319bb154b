"""A function's init runs with the garbage collector paused (riverbeam.aws.coldstart): it runs again once
init is done, what init made is frozen in Lambda only, and an init that fails leaves the collector as it
was. In Lambda, init also makes what the function's requests use (runtime.prepare); elsewhere it does not,
and a deployment whose settings are wrong still starts (its requests answer the error)."""

import gc
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from riverbeam.aws.coldstart import init_without_gc

ROOT = Path(__file__).resolve().parents[2]
FUNCTIONS = ("connections", "events", "invoke", "records", "resume", "sweep", "worker")
# loads each function's app.py by its file, as Lambda does, in a fresh interpreter
PROBE = """
import gc, importlib.util, json, sys
from riverbeam.aws import runtime
seen = {}
for name in sys.argv[1:]:
    runtime.reset()  # one process stands for every function's container
    spec = importlib.util.spec_from_file_location(f"app_{name}", f"functions/{name}/app.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    made = [f.__name__ for f in (runtime.beam, runtime.sqs, runtime.events_client, runtime.management_api)
            if f.cache_info().currsize]
    if runtime.beam.cache_info().currsize and not runtime.beam()._setup.loaders:
        runners = runtime.beam()._setup.agents
        made.append("agents:" + ",".join(sorted(runners)))
        # agents.yaml's runners make their model on first use: only where init asked for it
        if all(r._model is not None for r in runners.values()):
            made.append("models")
    seen[name] = [gc.isenabled(), gc.get_freeze_count(), callable(module.lambda_handler), made]
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


def _load_functions(in_lambda: bool, settings: dict[str, str]) -> dict[str, list[Any]]:
    env = {k: v for k, v in os.environ.items() if k != "AWS_LAMBDA_FUNCTION_NAME" and k not in SETTINGS}
    env |= {"PYTHONPATH": os.pathsep.join(sys.path), "AWS_DEFAULT_REGION": "us-east-1", **settings}
    if in_lambda:
        env["AWS_LAMBDA_FUNCTION_NAME"] = "riverbeam-probe"
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *FUNCTIONS],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    probed = [line for line in done.stdout.splitlines() if line.startswith("PROBE ")]
    seen: dict[str, list[Any]] = json.loads(probed[-1].removeprefix("PROBE "))
    return seen


def test_in_lambda_init_makes_what_requests_use_and_freezes_it() -> None:
    seen = _load_functions(in_lambda=True, settings=SETTINGS)
    assert all(enabled and handler for enabled, _, handler, _ in seen.values()), seen
    # the first function's init makes the bulk (boto3, pydantic, the layer); each later one adds to it
    frozen = [count for _, count, _, _ in seen.values()]
    assert isinstance(frozen[0], int) and frozen[0] > 50_000, seen
    assert frozen == sorted(frozen), seen
    agents = "agents:" + ",".join(sorted(yaml.safe_load((ROOT / "agents.yaml").read_text())["agents"]))
    assert {name: made for name, (*_, made) in seen.items()} == {
        "connections": ["beam"],
        "events": ["events_client"],
        "invoke": ["beam", "sqs", agents],
        "records": ["beam"],
        "resume": ["beam", "sqs", agents],
        "sweep": ["beam", "management_api"],
        "worker": ["beam", "management_api", agents, "models"],
    }


def test_elsewhere_init_makes_nothing_and_freezes_nothing() -> None:
    seen = _load_functions(in_lambda=False, settings=SETTINGS)
    assert all(on and fn and not frozen and not made for on, frozen, fn, made in seen.values()), seen


def test_a_function_whose_settings_are_wrong_still_starts_in_lambda() -> None:
    wrong = {**SETTINGS, "TABLE_NAME": "", "RIVERBEAM_AGENTS_FILE": "/nonexistent/agents.json"}
    seen = _load_functions(in_lambda=True, settings=wrong)
    assert all(on and handler and not made for on, _, handler, made in seen.values()), seen


def test_an_init_that_fails_leaves_the_collector_running_and_freezes_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "riverbeam-probe")
    frozen = gc.get_freeze_count()
    assert gc.isenabled()
    with pytest.raises(ImportError), init_without_gc():
        assert not gc.isenabled()
        raise ImportError("no module named app_dependency")
    assert gc.isenabled() and gc.get_freeze_count() == frozen


def test_a_collector_switched_off_before_init_stays_off() -> None:
    gc.disable()
    try:
        with init_without_gc():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()

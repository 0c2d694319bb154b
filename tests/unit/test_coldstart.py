"""A function's init runs with the garbage collector paused (riverbeam.aws.coldstart): it runs again once
init is done, what init made is frozen in Lambda only, and an init that fails leaves the collector as it
was."""

import gc
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from riverbeam.aws.coldstart import init_without_gc

ROOT = Path(__file__).resolve().parents[2]
FUNCTIONS = ("connections", "invoke", "records", "resume", "sweep", "worker")
# loads each function's app.py by its file, as Lambda does, in a fresh interpreter
PROBE = """
import gc, importlib.util, json, sys
seen = {}
for name in sys.argv[1:]:
    spec = importlib.util.spec_from_file_location(f"app_{name}", f"functions/{name}/app.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    seen[name] = [gc.isenabled(), gc.get_freeze_count(), callable(module.lambda_handler)]
print(json.dumps(seen))
"""


def _load_functions(in_lambda: bool) -> dict[str, list[object]]:
    env = {k: v for k, v in os.environ.items() if k != "AWS_LAMBDA_FUNCTION_NAME"}
    env |= {"PYTHONPATH": os.pathsep.join(sys.path), "AWS_DEFAULT_REGION": "us-east-1"}
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
    seen: dict[str, list[object]] = json.loads(done.stdout)
    return seen


def test_in_lambda_each_function_collects_again_after_init_and_froze_what_init_made() -> None:
    seen = _load_functions(in_lambda=True)
    assert all(enabled and handler for enabled, _, handler in seen.values()), seen
    # the first function's init makes the bulk (boto3, pydantic, the layer); each later one adds to it
    frozen = [count for _, count, _ in seen.values()]
    assert isinstance(frozen[0], int) and frozen[0] > 50_000, seen
    assert frozen == sorted(frozen), seen


def test_elsewhere_nothing_is_frozen() -> None:
    seen = _load_functions(in_lambda=False)
    assert all(enabled and handler and frozen == 0 for enabled, frozen, handler in seen.values()), seen


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

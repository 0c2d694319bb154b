"""A function's init runs with the garbage collector paused (riverbeam.aws.coldstart): it runs again once
init is done, what init made is frozen in Lambda only, and an init that fails leaves the collector as it
was. In Lambda, init also makes what the function's requests use (runtime.prepare); elsewhere it does not,
and a deployment whose settings are wrong still starts (its requests answer the error)."""

import gc
from typing import Any

import pytest
import yaml
from riverbeam.aws.coldstart import init_without_gc

from tests.support.function_init import FUNCTIONS, ROOT, SETTINGS, load_functions


def _load_functions(in_lambda: bool, settings: dict[str, str]) -> dict[str, list[Any]]:
    seen = load_functions(FUNCTIONS, in_lambda=in_lambda, settings=settings)
    return {name: [i.collecting, i.frozen, i.handler, i.made] for name, i in seen.items()}


CHANNELS = frozenset({"slack", "slack_notifier", "mail", "mail_notifier"})


def test_in_lambda_init_makes_what_requests_use_and_freezes_it() -> None:
    seen = _load_functions(in_lambda=True, settings=SETTINGS)
    assert all(enabled and handler for enabled, _, handler, _ in seen.values()), seen
    # the first function's init makes the bulk (boto3, pydantic, the layer); each later one adds to it
    # (the channels' functions are left out of the order: loaded after an agent function in this one process,
    # the reset frees that function's frozen agents, more than a notifier's small init adds)
    frozen = [count for name, (_, count, _, _) in seen.items() if name not in CHANNELS]
    assert isinstance(frozen[0], int) and frozen[0] > 50_000, seen
    assert frozen == sorted(frozen), seen
    assert all(count > frozen[0] for name, (_, count, _, _) in seen.items() if name in CHANNELS), seen
    agents = "agents:" + ",".join(sorted(yaml.safe_load((ROOT / "agents.yaml").read_text())["agents"]))
    assert {name: made for name, (*_, made) in seen.items()} == {
        "connections": ["beam"],
        "events": ["events_client"],
        "invoke": ["beam", "sqs", agents],
        "mail": ["beam", "sqs", agents],
        "mail_notifier": ["beam"],
        "records": ["beam"],
        "resume": ["beam", "sqs", agents],
        "slack": ["beam", "sqs", agents],
        "slack_notifier": ["beam"],
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

"""`riverbeam dev --traces` keeps the handlers' spans under the data dir as OTLP JSON (readable by their
owner alone, where its banner says), and `riverbeam trace [ID]` prints the approval loop from them: the run
that asked, the person's wait, and the run that resumed (the worker's, through the queue), with the tool's
span saying who decided; found by either run's id, the session's, a prefix, or as the latest run."""

from __future__ import annotations

import json
import re
import stat
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from riverbeam_local.clients.dev_process import DevProcess, running

from tests.support.agents import invoke_body, resume_body
from tests.support.devstack import http, riverbeam

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

# far above a run through the queue (about a second), for a loaded CI machine
TIMEOUT_SECONDS = 90.0


@pytest.fixture(scope="module")
def traced(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[DevProcess, Path]]:
    data_dir = tmp_path_factory.mktemp("dev")
    with running(data_dir, args=("--traces",)) as process:
        yield process, data_dir


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def trace_of(data_dir: Path, run_id: str, until: str) -> str:
    """`riverbeam trace RUN_ID`'s output, once it shows `until` (a span is written when it ends)."""
    deadline = time.monotonic() + TIMEOUT_SECONDS
    while True:
        shown = riverbeam("trace", run_id, "--data-dir", str(data_dir))
        if until in shown.stdout or time.monotonic() > deadline:
            assert shown.returncode == 0, shown.stderr
            return shown.stdout
        time.sleep(0.5)


def test_an_approval_loop_is_printed_as_two_runs_and_the_wait_between(
    traced: tuple[DevProcess, Path],
) -> None:
    dev, data_dir = traced
    status, asked = http(dev, "POST", "/invoke", invoke_body(text="Push docs/update"))
    assert status == 200 and asked["interrupted"], asked
    (action,) = asked["action_required"]
    status, ack = http(dev, "POST", "/resume", resume_body(asked))
    assert status == 202, ack

    shown = trace_of(data_dir, ack["run_id"], f"run {ack['run_id']} (resume), completed")
    lines = shown.splitlines()
    timing = r"\+[0-9.]+ (ms|s|min)( [0-9]+ s)?  [0-9.]+ (ms|s)"
    assert re.fullmatch(
        rf"invoke_agent author  {timing}  run {asked['run_id']} \(invoke\), interrupted", lines[0]
    )
    assert f"  asks a person: git_push action {action['action_id']}" in lines
    waited = [line for line in lines if "waited" in line]
    assert len(waited) == 1 and waited[0].endswith(
        f"for a person: action {action['action_id']} submitted by u1"
    )
    resumed = next(i for i, line in enumerate(lines) if f"run {ack['run_id']} (resume)" in line)
    assert lines.index(waited[0]) == resumed - 1
    push = [line for line in lines[resumed:] if line.strip().startswith("execute_tool git_push")]
    assert len(push) == 1 and push[0].endswith("ask, decided by u1"), shown
    assert any(line.strip().startswith("chat AuthorOfflineModel") for line in lines[:resumed])
    # from the asking run's id, the same story; and as the latest run, with no id
    assert trace_of(data_dir, asked["run_id"], "(resume), completed") == shown
    assert riverbeam("trace", "--data-dir", str(data_dir)).stdout == shown
    # from the session's id (the chat's), in capitals, cut to 8 digits: its two runs, headed by it
    session = riverbeam("trace", asked["session_id"][:8].upper(), "--data-dir", str(data_dir))
    assert (session.returncode, session.stderr) == (0, ""), session
    assert session.stdout == f"session {asked['session_id']}: 2 runs\n{shown}"

    # the file is OTLP JSON: one export request per line
    for line in (data_dir / "traces" / "spans.jsonl").read_text().splitlines():
        assert json.loads(line)["resourceSpans"][0]["scopeSpans"][0]["spans"]


def test_a_run_it_has_no_spans_of_is_said_so(traced: tuple[DevProcess, Path]) -> None:
    _, data_dir = traced
    absent = str(uuid.uuid4())
    shown = riverbeam("trace", absent, "--data-dir", str(data_dir))
    assert shown.returncode == 1 and shown.stdout == ""
    assert (
        shown.stderr == f"riverbeam trace: no run or session {absent} in {data_dir / 'traces/spans.jsonl'}\n"
    )
    shown = riverbeam("trace", "no-such-run", "--data-dir", str(data_dir))
    assert shown.returncode == 2 and shown.stdout == ""
    assert shown.stderr.startswith("riverbeam trace: no-such-run is not a run or session id: ")


def test_the_banner_says_where_the_traces_go_and_they_are_private(traced: tuple[DevProcess, Path]) -> None:
    dev, data_dir = traced
    spans = data_dir / "traces" / "spans.jsonl"
    assert dev.urls["Traces"] == str(spans)
    assert mode(spans.parent) == 0o700 and mode(spans) == 0o600
    assert mode(data_dir / "secret") == 0o600
    # the records are saved within seconds of a change
    status, answer = http(dev, "POST", "/invoke", invoke_body(text="Hello"))
    assert status == 200, answer
    records = data_dir / "records.json"
    deadline = time.monotonic() + TIMEOUT_SECONDS
    while not records.exists() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert mode(records) == 0o600

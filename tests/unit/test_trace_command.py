"""`riverbeam trace [ID]`: which runs it prints for the id a user has (none, a run's or a session's, in
any case, a prefix), and the one line it says instead where it cannot (a bad id, no such run, a traces
file that is damaged or cannot be read)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from riverbeam_local.clients import trace_tree

from tests.unit.test_trace_file import ASKING, LATER, OTHER, OTHER_SESSION, RESUMING, SESSION, write_story


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    write_story(tmp_path / trace_tree.TRACES_FILE)
    return tmp_path


def trace(data_dir: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = trace_tree.main([*args, "--data-dir", str(data_dir)])
    out, err = capsys.readouterr()
    return code, out, err


def run_lines(out: str) -> list[str]:
    """The runs printed, by id, in order."""
    return [
        line.split(" run ")[1].split(" ")[0] for line in out.splitlines() if line.startswith("invoke_agent")
    ]


def test_without_an_id_the_latest_run_is_printed(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = trace(data_dir, capsys)
    assert (code, err) == (0, "")
    assert run_lines(out) == [LATER]
    # the latest run's story: a resume brings the run that asked with it
    lines = (data_dir / trace_tree.TRACES_FILE).read_text().splitlines()
    (data_dir / trace_tree.TRACES_FILE).write_text(
        "\n".join(line for line in lines if LATER not in line) + "\n"
    )
    code, out, _ = trace(data_dir, capsys)
    assert code == 0 and run_lines(out) == [ASKING, RESUMING]


def test_a_session_id_prints_each_of_its_runs_in_order(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = trace(data_dir, capsys, SESSION.upper())
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == f"session {SESSION}: 3 runs"
    assert run_lines(out) == [ASKING, RESUMING, LATER]
    assert "  ... waited 3 min 12 s for a person: action act-1 submitted by u1" in lines
    assert lines[-1] == f"invoke_agent author  +3 min 14 s  500.0 ms  run {LATER} (invoke)"
    code, out, _ = trace(data_dir, capsys, OTHER_SESSION[:8])
    assert code == 0 and run_lines(out) == [OTHER]


def test_a_run_id_in_any_case_or_a_unique_prefix_names_the_run(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, whole, _ = trace(data_dir, capsys, RESUMING)
    assert run_lines(whole) == [ASKING, RESUMING] and not whole.startswith("session")
    for given in (RESUMING.upper(), f" {RESUMING} ", RESUMING[:8], RESUMING[:8].upper(), RESUMING[:13]):
        assert trace(data_dir, capsys, given) == (0, whole, "")
    assert trace(data_dir, capsys, RESUMING.replace("-", "")) == (0, whole, "")


def test_an_ambiguous_prefix_says_how_many_ids_it_matches(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = trace(data_dir, capsys, ASKING[:8])  # OTHER begins alike
    assert (code, out) == (1, "")
    assert err == (
        f"riverbeam trace: {ASKING[:8]} matches 2 run and session ids in "
        f"{data_dir / trace_tree.TRACES_FILE}: give more of it\n"
    )
    code, out, _ = trace(data_dir, capsys, ASKING[:10])
    assert code == 0 and run_lines(out) == [ASKING, RESUMING]


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ("", "an empty id"),
        ("   ", "an empty id"),
        ("r-404", "r-404 is not a run or session id"),
        (RESUMING[:7], f"{RESUMING[:7]} is not a run or session id"),  # too short a prefix
        (RESUMING + "0", f"{RESUMING}0 is not a run or session id"),
        ("da249042_3226", "da249042_3226 is not a run or session id"),
        ("id\x1b[31m", "id\\x1b[31m is not a run or session id"),  # escaped, as the output is
        ("f" * 5000, f"{'f' * 64}... is not a run or session id"),  # bounded
    ],
)
def test_what_is_not_an_id_is_said_so(
    data_dir: Path, capsys: pytest.CaptureFixture[str], given: str, said: str
) -> None:
    assert trace(data_dir, capsys, given) == (
        2,
        "",
        f"riverbeam trace: {said}: give a UUID, or its first 8 hex digits or more\n",
    )


def test_an_id_it_has_no_spans_of_says_where_it_looked(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = data_dir / trace_tree.TRACES_FILE
    assert trace(data_dir, capsys, "0123abcd") == (
        1,
        "",
        f"riverbeam trace: no run or session 0123abcd in {path}\n",
    )
    path.write_text("")
    assert trace(data_dir, capsys) == (1, "", f"riverbeam trace: no runs in {path}\n")
    path.unlink()
    assert trace(data_dir, capsys, RESUMING) == (
        1,
        "",
        f"riverbeam trace: no traces in {path}: start `riverbeam dev --traces`\n",
    )


def test_lines_cut_short_or_not_utf8_are_skipped_and_counted(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = data_dir / trace_tree.TRACES_FILE
    whole = trace(data_dir, capsys, RESUMING)
    lines = path.read_bytes().splitlines(keepends=True)
    damaged = [
        b"\xff\xfe\x80 not utf-8\n",
        lines[0][:100] + b"\xe2\x82\n",  # a write cut short by a crash, inside a character
        b"\n",  # blank: not counted
        os.urandom(64).replace(b"\n", b"") + b"\n",
        b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"name": 7}]}]}]}\n',
        lines[-1].replace(b'"links":[]', b'"links":[{"traceId":"a","spanId":[]}]'),  # ids must be text
        b"[" * 100_000 + b"\n",  # nested past what the parser recurses into
        b'{"resourceSpans": "\xc3\x28"}',  # the last line, cut short before its newline
    ]
    path.write_bytes(b"".join([*damaged[:3], *lines[:3], *damaged[3:5], *lines[3:], *damaged[5:]]))
    # the lines that hold spans are read as before
    assert trace(data_dir, capsys, RESUMING) == whole
    read = trace_tree.read_traces(path)
    assert read.skipped == 7
    # where the run is not found, the skipped lines are told, on a line of their own
    code, out, err = trace(data_dir, capsys, "0123abcd")
    assert (code, out) == (1, "")
    assert err.splitlines() == [
        f"riverbeam trace: no run or session 0123abcd in {path}",
        "riverbeam trace: 7 lines of it were skipped (not OTLP JSON: cut short or damaged)",
    ]


def test_a_traces_file_that_cannot_be_read_is_told_with_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / trace_tree.TRACES_FILE
    path.mkdir(parents=True)
    assert trace(tmp_path, capsys) == (1, "", f"riverbeam trace: {path} cannot be read: Is a directory\n")
    path.rmdir()
    path.symlink_to(path)
    assert trace(tmp_path, capsys, RESUMING) == (
        1,
        "",
        f"riverbeam trace: {path} cannot be read: Too many levels of symbolic links\n",
    )
    path.unlink()
    os.mkfifo(path)  # opening it would wait for a writer
    assert trace(tmp_path, capsys) == (1, "", f"riverbeam trace: {path} cannot be read: not a regular file\n")


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file whatever its mode")
def test_a_traces_file_without_read_permission_is_told_with_why(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = data_dir / trace_tree.TRACES_FILE
    os.chmod(path, 0)
    assert trace(data_dir, capsys) == (1, "", f"riverbeam trace: {path} cannot be read: Permission denied\n")

"""The local stack's secret (riverbeam_local.stack_secret): made once per data dir, readable by its owner
alone, the same after a restart, the variable's where set; and where the clients find it."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest
from riverbeam_local.stack_secret import (
    SECRET_VARIABLE,
    SecretError,
    find_secret,
    page_url,
    secret_in_url,
    stack_secret,
)


@pytest.fixture(autouse=True)
def no_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(SECRET_VARIABLE, raising=False)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_new_data_dir_gets_a_random_secret_for_its_owner_alone(tmp_path: Path) -> None:
    secret = stack_secret(tmp_path)
    assert len(secret) >= 43 and secret.isascii() and " " not in secret
    assert not secret.startswith("-")  # a command line would read `--secret -x...` as another flag
    assert (tmp_path / "secret").read_text().strip() == secret
    assert mode(tmp_path / "secret") == 0o600
    assert stack_secret(tmp_path) == secret  # a restart
    other = tmp_path / "other"
    other.mkdir()
    assert stack_secret(other) != secret  # each data dir its own
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".secret-")] == []  # no draft left


def test_the_file_is_made_0600_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        stack_secret(tmp_path)
    finally:
        os.umask(old)
    assert mode(tmp_path / "secret") == 0o600


def test_a_file_others_could_read_is_made_the_owners_again(tmp_path: Path) -> None:
    secret = stack_secret(tmp_path)
    (tmp_path / "secret").chmod(0o644)
    assert stack_secret(tmp_path) == secret
    assert mode(tmp_path / "secret") == 0o600


def test_stacks_starting_together_on_one_data_dir_share_one_secret(tmp_path: Path) -> None:
    start = threading.Barrier(8, timeout=60)
    found: list[str] = []

    def starting() -> None:
        start.wait()
        found.append(stack_secret(tmp_path))

    threads = [threading.Thread(target=starting) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(found) == 8 and len(set(found)) == 1
    assert (tmp_path / "secret").read_text().strip() == found[0]


def test_the_variable_wins_and_is_not_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    made = stack_secret(tmp_path)
    monkeypatch.setenv(SECRET_VARIABLE, "chosen-by-me-0123456789")
    assert stack_secret(tmp_path) == "chosen-by-me-0123456789"
    assert (tmp_path / "secret").read_text().strip() == made  # the file is left as it was
    monkeypatch.delenv(SECRET_VARIABLE)
    assert stack_secret(tmp_path) == made


def test_an_empty_variable_is_no_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SECRET_VARIABLE, "")
    assert stack_secret(tmp_path) == (tmp_path / "secret").read_text().strip()


@pytest.mark.parametrize(
    "given", ["short", "has a space in it 0123", "tab\there-0123456789", "é" * 20, "x" * 513]
)
def test_an_unusable_variable_is_said_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, given: str
) -> None:
    monkeypatch.setenv(SECRET_VARIABLE, given)
    with pytest.raises(SecretError) as error:
        stack_secret(tmp_path)
    assert SECRET_VARIABLE in str(error.value) and "\n" not in str(error.value)
    assert given not in str(error.value)  # never echoed


@pytest.mark.parametrize("content", ["", "\n", "two words here and more"])
def test_a_spoilt_file_is_said_not_replaced(tmp_path: Path, content: str) -> None:
    (tmp_path / "secret").write_text(content)
    with pytest.raises(SecretError) as error:
        stack_secret(tmp_path)
    assert str(tmp_path / "secret") in str(error.value) and "delete it" in str(error.value)
    assert (tmp_path / "secret").read_text() == content


def test_a_secret_that_is_a_directory_is_said(tmp_path: Path) -> None:
    (tmp_path / "secret").mkdir()
    with pytest.raises(SecretError, match="not a regular file"):
        stack_secret(tmp_path)


def test_the_clients_take_the_flag_then_the_variable_then_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert find_secret(None, tmp_path) is None
    made = stack_secret(tmp_path)
    assert find_secret(None, tmp_path) == made
    monkeypatch.setenv(SECRET_VARIABLE, "from-the-variable-0123")
    assert find_secret(None, tmp_path) == "from-the-variable-0123"
    assert find_secret("from-the-flag-0123456", tmp_path) == "from-the-flag-0123456"


@pytest.mark.parametrize("secret", ["Hre-ykfOc3GA583Y1QaqZkUKopFpsEoJ7DehWx9rU0I", "a+b&c#d%e=f?g/h 0123456"])
def test_the_pages_url_carries_the_secret_in_its_fragment(secret: str) -> None:
    url = page_url("http://127.0.0.1:3000/", secret)
    assert url.startswith("http://127.0.0.1:3000/#secret=")
    assert secret_in_url(url) == secret
    assert secret_in_url("http://127.0.0.1:3000/") is None


def test_the_data_dirs_secret_goes_only_to_a_stack_on_this_machine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(SECRET_VARIABLE, raising=False)
    made = stack_secret(tmp_path)
    for url in ("http://127.0.0.1:3000", "http://localhost:3000", "http://[::1]:3000", "http://127.0.0.2:9"):
        assert find_secret(None, tmp_path, url=url) == made
    for url in ("http://example.com:3000", "https://10.0.0.5", "http://127.0.0.1.example.com"):
        assert find_secret(None, tmp_path, url=url) is None
    # what the user gives explicitly is sent wherever the user points it
    assert find_secret("from-the-flag-0123456", tmp_path, url="http://example.com") == "from-the-flag-0123456"

"""`riverbeam dev --model bedrock` without a region or credentials says which is missing in one line and
exits 2 before it starts anything."""

from __future__ import annotations

from pathlib import Path

import pytest
from riverbeam_local.stack import dev_command


@pytest.fixture
def no_aws(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in (
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
        "AWS_PROFILE",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # no instance role to look for


@pytest.mark.parametrize(
    ("variables", "said"),
    [
        (
            {},
            "riverbeam dev: --model bedrock needs an AWS region: set AWS_DEFAULT_REGION"
            " (or a profile's region)\n",
        ),
        (
            {"AWS_DEFAULT_REGION": "eu-west-1"},
            "riverbeam dev: --model bedrock needs AWS credentials: set AWS_PROFILE",
        ),
    ],
)
def test_what_bedrock_needs_is_checked_before_the_stack_starts(
    no_aws: None,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    variables: dict[str, str],
    said: str,
) -> None:
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    code = dev_command.main(["--model", "bedrock", "--data-dir", str(tmp_path / "data"), "--port", "0"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith(said) and err.count("\n") == 1, err
    assert not (tmp_path / "data").exists()  # nothing started, nothing made

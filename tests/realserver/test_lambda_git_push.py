"""A Lambda-like run of what `sam build` makes, pushing with git and no `git`: the functions and the layer
(built with its own dependencies) read-only, in an interpreter with nothing else on its path (no site
packages, so no dev dependency), PATH without git, a temp dir the only place written; RIVERBEAM_GIT_REMOTE is
a smart-HTTP git server on 127.0.0.1 that asks for credentials, RIVERBEAM_GIT_SECRET a secret in the embedded
server's Secrets Manager. The push lands on the remote after the person approves it."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import uuid
from pathlib import Path

import boto3
import pytest
from beam_store.dynamo import TABLE_DEFINITION
from dulwich.repo import Repo

from tests.realserver.test_layer import _runtime_dir
from tests.support.git_server import git_http_server, hosted_remote

ROOT = Path(__file__).resolve().parents[2]
USER, TOKEN = "deploy-bot", "not-a-real-token"

pytestmark = pytest.mark.realserver


def read_only(tree: Path) -> None:
    for path in [tree, *tree.rglob("*")]:
        if not path.is_symlink():
            path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def writable(tree: Path) -> None:
    for path in [tree, *tree.rglob("*")]:
        if not path.is_symlink():
            path.chmod(path.stat().st_mode | stat.S_IWUSR)


def branch(bare: Path, name: str) -> str:
    with Repo(str(bare)) as repo:
        return repo.refs[b"refs/heads/" + name.encode()].decode()


# builds the layer with pip (seconds to a minute, loaded) and runs a probe: far above, only a hang reaches it
@pytest.mark.timeout(1200)
def test_an_approved_push_lands_from_the_built_functions_with_no_git(
    tmp_path: Path, dynamodb_url: str
) -> None:
    task, layer, scratch, empty = tmp_path / "task", tmp_path / "opt", tmp_path / "tmp", tmp_path / "bin"
    for folder in (scratch, empty):
        folder.mkdir()
    git_layer = tmp_path / "opt-git"  # Lambda extracts every layer of a function into one /opt
    for target, name in ((layer, "riverbeam"), (git_layer, "git")):
        build = [
            sys.executable,
            str(ROOT / "scripts" / "build_layer.py"),
            str(target),
            "--current-interpreter",
        ]
        subprocess.run([*build, "--layer", name], check=True, capture_output=True, timeout=600)
    assert not (layer / "python" / "dulwich").exists()  # the Riverbeam layer stays under its 5 MB goal
    assert (git_layer / "python" / "dulwich").is_dir() and not (git_layer / "python" / "urllib3").exists()
    shutil.copytree(ROOT / "functions", task, ignore=shutil.ignore_patterns("__pycache__"))
    runtime = _runtime_dir(tmp_path / "runtime")
    secret = boto3.client("secretsmanager", endpoint_url=dynamodb_url).create_secret(
        Name=f"riverbeam/git-{uuid.uuid4().hex[:6]}",
        SecretString=json.dumps({"username": USER, "password": TOKEN}),
    )["ARN"]
    bare = hosted_remote(tmp_path / "server")
    before = branch(bare, "docs/update")
    for tree in (task, layer, git_layer, runtime):
        read_only(tree)
    try:
        with git_http_server(bare, username=USER, password=TOKEN) as url:
            env = {
                "PATH": str(empty),  # no git, nothing else
                "HOME": str(scratch),
                "TMPDIR": str(scratch),
                "PYTHONDONTWRITEBYTECODE": "1",
                "PYTHONPATH": os.pathsep.join(
                    [str(task / "worker"), str(layer / "python"), str(git_layer / "python"), str(runtime)]
                ),
                "RIVERBEAM_ROOT": str(ROOT),
                "FUNCTIONS": str(task),
                "AWS_LAMBDA_FUNCTION_NAME": "riverbeam-probe",
                "AWS_ENDPOINT_URL": dynamodb_url,
                "WEBSOCKET_ENDPOINT": dynamodb_url,
                "AWS_ACCESS_KEY_ID": "testing",
                "AWS_SECRET_ACCESS_KEY": "testing",
                "AWS_DEFAULT_REGION": "us-east-1",
                "TABLE_NAME": f"riverbeam-{uuid.uuid4().hex[:8]}",
                "TABLE_DEFINITION": json.dumps(TABLE_DEFINITION),
                "AUTH_MODE": "none",
                "RIVERBEAM_MODEL": "offline",
                "RIVERBEAM_AGENTS_FILE": str(layer / "agents.json"),
                "RIVERBEAM_DATA_DIR": str(scratch / "riverbeam"),
                "RIVERBEAM_GIT_REMOTE": url,
                "RIVERBEAM_GIT_SECRET": secret,
                "POWERTOOLS_SERVICE_NAME": "riverbeam",
                "POWERTOOLS_METRICS_NAMESPACE": "Riverbeam",
                "POWERTOOLS_LOG_LEVEL": "WARNING",
            }
            probe = subprocess.run(
                [sys.executable, "-S", str(Path(__file__).with_name("git_push_probe.py"))],
                env=env,
                capture_output=True,
                text=True,
                timeout=600,
                check=False,
            )
    finally:
        for tree in (task, layer, git_layer, runtime):
            writable(tree)  # so that pytest can remove them
    assert probe.returncode == 0, probe.stderr[-3000:]
    report = json.loads(probe.stdout.strip().splitlines()[-1])
    assert report["dulwich"].startswith(str(git_layer / "python"))
    assert not any("site-packages" in entry for entry in report["path"])
    assert report["asked"] == ["git_push", {"ref": "docs/update"}]
    assert (report["resumed"], report["worker"]) == (202, {"batchItemFailures": []})
    assert report["status"] == "resolved" and report["outcome"]["error"] is None, report["outcome"]
    assert report["outcome"]["output"]["commit"] == report["made"] != before
    assert branch(bare, "docs/update") == report["made"]  # the push landed
    assert TOKEN not in report["git_config"] and TOKEN not in probe.stdout

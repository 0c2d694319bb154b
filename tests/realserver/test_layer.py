"""The layer as `sam build` makes it (with its own dependencies) runs the handlers in an interpreter that
has nothing else: the function's folder, the layer's python/ and boto3 as the Lambda runtime provides it,
against the embedded server on 127.0.0.1 (DynamoDB, SQS and the management API)."""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from beam_store.dynamo import TABLE_DEFINITION

ROOT = Path(__file__).resolve().parents[2]
# what the python3.12 runtime has beside the standard library (/var/runtime)
RUNTIME_PACKAGES = ("boto3", "botocore", "s3transfer", "jmespath", "dateutil", "urllib3", "six")

pytestmark = pytest.mark.realserver


def _runtime_dir(target: Path) -> Path:
    for name in RUNTIME_PACKAGES:
        module = importlib.import_module(name)
        source = Path(module.__file__ or "")
        if source.name == "__init__.py":
            shutil.copytree(source.parent, target / name)
        else:
            shutil.copy(source, target / source.name)
    return target


# builds the layer with pip (seconds to a minute, loaded) and runs a probe: far above, only a hang reaches it
@pytest.mark.timeout(1200)
def test_the_built_layer_runs_a_streamed_invoke(tmp_path: Path, dynamodb_url: str) -> None:
    layer = tmp_path / "layer"
    subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "build_layer.py"), str(layer), "--current-interpreter"],
        check=True,
        capture_output=True,
        timeout=600,
    )
    assert not (layer / "python" / "boto3").exists() and not (layer / "python" / "botocore").exists()
    runtime = _runtime_dir(tmp_path / "runtime")
    env = {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": os.pathsep.join(
            [str(ROOT / "functions" / "worker"), str(layer / "python"), str(runtime)]
        ),
        "RIVERBEAM_ROOT": str(ROOT),
        "AWS_ENDPOINT_URL": dynamodb_url,
        "WEBSOCKET_ENDPOINT": dynamodb_url,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "TABLE_NAME": f"riverbeam-{uuid.uuid4().hex[:8]}",
        "TABLE_DEFINITION": json.dumps(TABLE_DEFINITION),
        "AUTH_MODE": "none",
        "RIVERBEAM_DATA_DIR": str(tmp_path / "data"),
        "POWERTOOLS_SERVICE_NAME": "riverbeam",
        "POWERTOOLS_METRICS_NAMESPACE": "Riverbeam",
        "POWERTOOLS_LOG_LEVEL": "WARNING",
    }
    probe = subprocess.run(
        [sys.executable, "-S", str(Path(__file__).with_name("layer_probe.py"))],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert probe.returncode == 0, probe.stderr[-3000:]
    report = json.loads(probe.stdout.strip().splitlines()[-1])
    for name in ("riverbeam", "beam_store", "pydantic"):
        assert report["modules"][name].startswith(str(layer / "python")), name
    assert report["modules"]["boto3"].startswith(str(runtime))
    assert not any("site-packages" in entry for entry in report["path"])
    assert (report["connected"], report["accepted"], report["worker"]) == (
        200,
        202,
        {"batchItemFailures": []},
    )
    frames = report["frames"]
    assert [f["frame_seq"] for f in frames] == list(range(len(frames)))
    assert frames[-1]["type"] == "done" and frames[-1]["result"]["interrupted"]
    assert report["pushed"] == len(frames) and report["gone"] == 0

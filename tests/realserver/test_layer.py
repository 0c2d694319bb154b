"""The layer as `sam build` makes it (with its own dependencies) runs the handlers in an interpreter that
has nothing else: the function's folder, the layer's python/ and boto3 as the Lambda runtime provides it,
against the embedded server on 127.0.0.1 (DynamoDB, SQS and the management API)."""

from __future__ import annotations

import importlib
import json
import os
import re
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
        # as in Lambda: init makes what requests use (runtime.prepare) and freezes it (coldstart)
        "AWS_LAMBDA_FUNCTION_NAME": "riverbeam-probe",
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


# ---------------------------------------------------------------- the layers as `sam build` ships them

sys.path.insert(0, str(ROOT / "scripts"))
import build_layer  # noqa: E402

RUNTIME_PYTHON = build_layer.runtime_interpreter(build_layer.parse_args(["unused"]))
needs_runtime_python = pytest.mark.skipif(
    RUNTIME_PYTHON is None,
    reason="no Python 3.12 (pyenv or python3.12 on PATH): the layer ships no byte code",
)
TOKEN_PACKAGES = ("jwt", "cryptography")


@pytest.fixture(scope="module")
def shipped(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Both layers as sam build makes them: wheels for python3.12 on manylinux x86_64, byte code."""
    layers = {}
    for name in ("riverbeam", "tokens"):
        layers[name] = tmp_path_factory.mktemp(f"shipped-{name}")
        subprocess.run(
            [sys.executable, str(ROOT / "scripts" / "build_layer.py"), str(layers[name]), "--layer", name],
            check=True,
            capture_output=True,
            timeout=600,
        )
    return layers


@pytest.mark.timeout(1200)
def test_only_the_tokens_layer_carries_the_token_library(shipped: dict[str, Path]) -> None:
    main, tokens = (
        {p.name.split(".")[0] for p in (shipped[n] / "python").iterdir()} for n in ("riverbeam", "tokens")
    )
    assert {"riverbeam", "beam_store", "pydantic", "aws_lambda_powertools", "yaml"} <= main
    assert not {n for n in main if n.startswith(("jwt", "pyjwt", "cryptography", "cffi", "_cffi"))}, main
    assert set(TOKEN_PACKAGES) <= tokens
    # nothing in both: Lambda extracts the layers into one /opt, the later one over the earlier
    assert main & tokens <= {"__pycache__"}, main & tokens
    assert (shipped["riverbeam"] / "agents.json").is_file() and not (
        shipped["tokens"] / "agents.json"
    ).exists()


@needs_runtime_python
@pytest.mark.timeout(1200)
def test_python_312_imports_the_shipped_layers_from_their_byte_code(
    shipped: dict[str, Path], tmp_path: Path
) -> None:
    assert RUNTIME_PYTHON is not None
    site = shipped["riverbeam"] / "python"
    own = sorted((site / "riverbeam").rglob("__pycache__/*.cpython-312.pyc"))
    assert len(own) >= len(list((site / "riverbeam").rglob("*.py"))) - 1
    # PEP 552 unchecked-hash pycs (flags 0b01): loaded without a look at their sources or their mtimes
    assert {int.from_bytes(p.read_bytes()[4:8], "little") for p in own} == {1}
    assert (site / "pydantic" / "__init__.pyc").is_file() and not (site / "pydantic" / "__init__.py").exists()
    # a read-only copy, as Lambda mounts it: nothing may be written, nothing but app.py compiled
    opt = tmp_path / "opt"
    for name in ("riverbeam", "tokens"):
        shutil.copytree(shipped[name], opt, dirs_exist_ok=True)
    runtime = _runtime_dir(tmp_path / "runtime")
    subprocess.run([RUNTIME_PYTHON, "-m", "compileall", "-q", str(runtime)], check=True, capture_output=True)
    probe = """
import _frozen_importlib_external as bootstrap, json, sys
compiled = []
to_code = bootstrap.SourceLoader.source_to_code
def counting(self, data, path, *args, **kwargs):
    compiled.append(path)
    return to_code(self, data, path, *args, **kwargs)
bootstrap.SourceLoader.source_to_code = counting
import riverbeam.aws.http, riverbeam.aws.websocket, riverbeam.aws.worker, riverbeam.aws.identity
import riverbeam.agent.config
import base64, time
import pydantic, yaml
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from riverbeam.aws import tokens
def b64(raw): return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
numbers = key.public_key().public_numbers()
n, e = b64(numbers.n.to_bytes(256, "big")), b64(numbers.e.to_bytes(3, "big"))
jwk = {"kty": "RSA", "kid": "k1", "n": n, "e": e}
claims = {"sub": "u1", "iss": "issuer", "exp": time.time() + 600}
signing_input = b64(b'{"alg":"RS256","kid":"k1"}') + "." + b64(json.dumps(claims).encode())
token = signing_input + "." + b64(key.sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256()))
public = tokens.key_set(json.dumps({"keys": [jwk]}).encode())["k1"]
assert tokens.verify(tokens.parse(token), public, "issuer")["sub"] == "u1"
shown = ("riverbeam.aws.http", "pydantic", "riverbeam.aws.tokens", "jwt", "cryptography")
modules = {m: sys.modules[m].__file__ for m in shown}
print(json.dumps({"compiled": compiled, "version": list(sys.version_info[:2]), "modules": modules}))
"""
    before = sorted(str(p) for p in opt.rglob("*"))
    done = _run_on_runtime(probe, opt, runtime)
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["version"] == [3, 12]
    assert report["compiled"] == []
    assert all(path.startswith(str(opt / "python")) for path in report["modules"].values()), report
    assert sorted(str(p) for p in opt.rglob("*")) == before


def _run_on_runtime(probe: str, opt: Path, runtime: Path) -> subprocess.CompletedProcess[str]:
    """`probe` run by Python 3.12 with `-S` (no site packages), on `opt`'s layers and the runtime's
    own modules, as Lambda runs a function; it must succeed."""
    assert RUNTIME_PYTHON is not None
    env = {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": os.pathsep.join([str(opt / "python"), str(runtime)]),
        "PYTHONDONTWRITEBYTECODE": "1",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    done = subprocess.run(
        [RUNTIME_PYTHON, "-S", "-c", probe], env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def _top_names(layer: Path) -> set[str]:
    """What a layer puts at the top of /opt/python: packages, modules and .dist-info, by name."""
    return {re.split(r"[-.]", p.name)[0] for p in (layer / "python").iterdir()} - {"__pycache__"}


@needs_runtime_python
@pytest.mark.timeout(1200)
def test_the_mcp_layer_carries_nothing_of_the_riverbeam_layer_and_imports_over_it(
    shipped: dict[str, Path], tmp_path: Path
) -> None:
    assert RUNTIME_PYTHON is not None
    mcp = tmp_path / "mcp"
    subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "build_layer.py"), str(mcp), "--layer", "mcp"],
        check=True,
        capture_output=True,
        timeout=600,
    )
    main, carried = _top_names(shipped["riverbeam"]), _top_names(mcp)
    assert {"mcp", "mcp_types", "anyio", "jsonschema"} <= carried
    # Lambda extracts a function's layers into one /opt in order: a second pydantic (or typing-extensions,
    # opentelemetry-api) from the MCP layer would overwrite the Riverbeam layer's files
    assert not main & carried, sorted(main & carried)
    assert not {"pydantic", "pydantic_core", "typing_extensions", "opentelemetry"} & carried
    # both in one /opt, as the agents' functions have them: riverbeam.mcp's client imports on Python 3.12
    opt = tmp_path / "opt"
    for layer in (shipped["riverbeam"], mcp):
        shutil.copytree(layer, opt, dirs_exist_ok=True)
    runtime = _runtime_dir(tmp_path / "runtime")
    probe = "import riverbeam.mcp.client, pydantic, mcp; print(pydantic.VERSION, mcp.__file__)"
    done = _run_on_runtime(probe, opt, runtime)
    assert done.stdout.split()[1].startswith(str(opt / "python")), done.stdout

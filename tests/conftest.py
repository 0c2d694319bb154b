from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

# The tests import riverbeam and beam_store from the layer as `sam build` makes it and as Lambda mounts it
# (its python/ folder on the import path), not from the source tree: a package the layer leaves out fails
# here first. Its third-party packages come from the test environment (tests/realserver/test_layer.py runs
# a handler on the layer with its own).
# Each framework's runner modules are in its framework's layer (the Riverbeam layer leaves them out): merged
# into the same python/ folder, as Lambda merges a function's layers.
LAYER = Path(tempfile.mkdtemp(prefix="riverbeam-layer-"))
BUILT = Path(tempfile.mkdtemp(prefix="riverbeam-layers-"))
atexit.register(shutil.rmtree, LAYER, ignore_errors=True)
atexit.register(shutil.rmtree, BUILT, ignore_errors=True)
for layer in ("riverbeam", "pydantic_ai", "langgraph", "openai_agents", "strands"):
    built = BUILT / layer
    subprocess.run(
        [
            sys.executable,
            str(Path(__file__).resolve().parents[1] / "scripts" / "build_layer.py"),
            str(built),
            "--layer",
            layer,
            "--no-deps",
        ],
        check=True,
        capture_output=True,
        timeout=600,  # a copy of a few packages: seconds, even on a loaded machine
    )
    shutil.copytree(built, LAYER, dirs_exist_ok=True)  # python/, and the Riverbeam layer's agents.json
sys.path.insert(0, str(LAYER / "python"))

import pytest  # noqa: E402
from beam_store import BeamStore, InMemoryStore  # noqa: E402
from beam_store.embedded import embedded_dynamodb  # noqa: E402

from tests.support.stores import moto_store, server_store  # noqa: E402

# tests reach no AWS account: fake credentials, one region, no endpoint from the environment
os.environ.update(
    AWS_ACCESS_KEY_ID="testing",
    AWS_SECRET_ACCESS_KEY="testing",
    AWS_DEFAULT_REGION="us-east-1",
    AWS_REGION="us-east-1",
)
for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB"):
    os.environ.pop(name, None)


@pytest.fixture(scope="session")
def dynamodb_url() -> Iterator[str]:
    with embedded_dynamodb() as url:
        yield url


@pytest.fixture(params=["memory", "moto", "server"])
def store(request: pytest.FixtureRequest) -> Iterator[BeamStore]:
    """Every store the contract suite runs on."""
    if request.param == "memory":
        yield InMemoryStore()
    elif request.param == "moto":
        with moto_store() as s:
            yield s
    else:
        yield server_store(request.getfixturevalue("dynamodb_url"))

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from beam_store import BeamStore, InMemoryStore
from beam_store.embedded import embedded_dynamodb

from tests.support.stores import moto_store, server_store

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

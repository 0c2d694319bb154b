"""The tests run on the layer's folder, as Lambda mounts it."""

from __future__ import annotations

from pathlib import Path

import beam_store
import riverbeam
import riverbeam.aws

from tests.conftest import LAYER


def test_the_packages_come_from_the_built_layer() -> None:
    for module in (riverbeam, riverbeam.aws, beam_store):
        assert Path(module.__file__ or "").is_relative_to(LAYER / "python"), module.__name__

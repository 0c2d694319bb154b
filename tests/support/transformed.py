"""template.yaml as CloudFormation receives it (packaged, SAM's transform applied), made by the same code
as CI's check, scripts/check_transformed.py."""

from __future__ import annotations

import copy
import functools
import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def _load_checker() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "check_transformed", ROOT / "scripts" / "check_transformed.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


checker = _load_checker()


@functools.cache
def _transformed(auth_mode: str, overrides: tuple[tuple[str, str], ...]) -> dict[str, Any]:
    template = checker.packaged(checker.read_template())
    return checker.transform(template, parameters(auth_mode, **dict(overrides)))  # type: ignore[no-any-return]


def parameters(auth_mode: str, **overrides: str) -> dict[str, str]:
    """The parameter values of a deployment with this AuthMode, as the check uses them."""
    return checker.deployment_parameters(auth_mode, **overrides)  # type: ignore[no-any-return]


def transformed(auth_mode: str, **overrides: str) -> dict[str, Any]:
    """A copy of the transformed template for a deployment with this AuthMode (and these parameters)."""
    return copy.deepcopy(_transformed(auth_mode, tuple(sorted(overrides.items()))))


def auth_modes() -> list[str]:
    return checker.auth_modes(checker.read_template())  # type: ignore[no-any-return]

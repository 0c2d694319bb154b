"""Approval policy on Cedar (CONTRACT 10): `Policy` decides each proposed tool call allow, ask or deny.

`Policy` imports cedarpy (4.7 MB, tens of ms to import), so it is loaded on first use of the name: a
function whose agents have no policy never imports it; `Decision` needs no Cedar."""

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .cedar import BASELINE, Policy
    from .decision import Decision, Effect
    from .gate import CallGate

_HOME = {
    "BASELINE": ".cedar",
    "Policy": ".cedar",
    "Decision": ".decision",
    "Effect": ".decision",
    "CallGate": ".gate",
}


def __getattr__(name: str) -> Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(module, __name__), name)


__all__ = ["BASELINE", "CallGate", "Decision", "Effect", "Policy"]

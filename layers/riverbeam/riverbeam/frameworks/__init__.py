"""Agents of other frameworks inside Riverbeam (CONTRACT 15): each runner wraps a framework's agent, and
imports its framework only when it is made (each is an optional extra and, deployed, a layer of its own)."""

from __future__ import annotations

import importlib
from typing import Any

# the runner's name -> the module that holds it
_HOMES = {
    "PydanticAIRunner": "riverbeam.frameworks.pydantic_ai",
    "LangGraphRunner": "riverbeam.frameworks.langgraph",
    "OpenAIAgentsRunner": "riverbeam.frameworks.openai_agents",
    "StrandsRunner": "riverbeam.frameworks.strands",
}
__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)

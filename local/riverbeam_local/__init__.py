"""Riverbeam's local tooling: the dev stack (`stack/`), the command line clients of a running stack
(`clients/`) and the inbox page (`inbox/`). The deployed functions never import it."""

from .command import main

__all__ = ["main"]

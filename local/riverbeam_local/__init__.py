"""`riverbeam dev`: Riverbeam's HTTP and WebSocket APIs on 127.0.0.1, as API Gateway serves them, routed to
the handlers of functions/ in-process (developer tooling: the deployed functions never import this)."""

from .cli import main

__all__ = ["main"]

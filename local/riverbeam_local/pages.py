"""The approval inbox page (issue 13), served at / beside the API: static files that call the same HTTP and
WebSocket API as any other client."""

from __future__ import annotations

from starlette.routing import BaseRoute


def routes() -> list[BaseRoute]:
    """The page's routes, matched before the API's (the page is being built: none yet)."""
    return []

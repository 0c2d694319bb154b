"""The approval inbox page (issue 13), served at / beside the API: static files that call the same HTTP and
WebSocket API as any other client.

static/index.html is the page and static/inbox/ its assets (script, style, config.js), so the folder can be
copied as it is to any static host: index.html at the root, inbox/ beside it. The stack serves them behind its
door (door.py: no secret needed for them, a Content-Security-Policy added); a static host sets its own."""

from __future__ import annotations

from pathlib import Path

from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

STATIC = Path(__file__).resolve().parent / "static"
INDEX = STATIC / "index.html"
# the assets' prefix: no API route starts with it, so the page never shadows one
ASSETS_PATH = "/inbox"


async def index(_: Request) -> Response:
    # no-cache: a browser revalidates, so a new page is seen after an upgrade without a stale copy
    return FileResponse(INDEX, media_type="text/html", headers={"cache-control": "no-cache"})


def routes() -> list[BaseRoute]:
    """The page's routes, matched before the API's: GET / (the page) and /inbox/* (its assets); only
    GET and HEAD, so a POST / still meets the API's 404. An install without the page's files (package
    data left out) serves the API alone rather than failing to start."""
    if not INDEX.is_file():
        return []
    return [
        Route("/", index, methods=["GET", "HEAD"]),
        Mount(ASSETS_PATH, app=StaticFiles(directory=STATIC / "inbox"), name="inbox"),
    ]

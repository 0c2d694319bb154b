"""A git remote over smart HTTP on 127.0.0.1 (dulwich's WSGI application behind wsgiref), asking for HTTP
Basic credentials as a hosted remote does: what the cloud's clone and pushes talk to in the tests."""

from __future__ import annotations

import base64
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from dulwich.repo import Repo
from dulwich.server import DictBackend
from dulwich.web import make_wsgi_chain
from riverbeam.tools.gitpush import push_branch
from riverbeam.tools.gitrepo import init_workspace

Wsgi = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


def _basic_auth(app: Wsgi, username: str, password: str) -> Wsgi:
    expected = "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()

    def checked(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("HTTP_AUTHORIZATION") != expected:
            start_response("401 Unauthorized", [("WWW-Authenticate", 'Basic realm="git"')])
            return [b"credentials needed\n"]
        return app(environ, start_response)

    return checked


def _logged(app: Wsgi, log: list[str]) -> Wsgi:
    def logging(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        query = environ.get("QUERY_STRING", "")
        log.append(f"{environ['REQUEST_METHOD']} {environ['PATH_INFO']}" + (f"?{query}" if query else ""))
        return app(environ, start_response)

    return logging


@contextmanager
def git_http_server(
    repository: Path, *, username: str, password: str, log: list[str] | None = None
) -> Iterator[str]:
    """Serve the bare `repository` at the URL yielded (`http://127.0.0.1:<port>/repo.git`), fetch and
    push, to requests with these credentials alone; stopped on exit. `log`: each request's method, path
    and query are appended to it (`GET /repo.git/info/refs?service=git-upload-pack` begins a clone or
    a fetch), whether its credentials were right or not."""
    backend = DictBackend({"/repo.git": Repo(str(repository))})
    app = _basic_auth(make_wsgi_chain(backend), username, password)
    if log is not None:
        app = _logged(app, log)
    server: WSGIServer = make_server("127.0.0.1", 0, app, handler_class=_Quiet)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/repo.git"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=30)


def hosted_remote(root: Path) -> Path:
    """A bare repository under `root` holding `main` and `docs/update`, as a hosted remote would."""
    work, remote = root / "seed", root / "hosted.git"
    init_workspace(work, remote)
    with Repo(str(work)) as seed:
        for branch in ("main", "docs/update"):
            push_branch(seed, str(remote), branch)
    return remote

"""An embedded DynamoDB-compatible server on 127.0.0.1: moto's app, one request at a time.

moto's stock server is threaded and was seen to let two conditional writes of one item both win;
served one request at a time it has no such race and keeps transactions. Needs the `dev` extra.

    python -m beam_store.embedded [--port 0]   # prints its URL once it is listening
"""

from __future__ import annotations

import argparse
import logging
import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

START_TIMEOUT_SECONDS = 120


def prepare_moto() -> None:
    """moto's DynamoDB (in this process) made to cost what a request touches, not the table: a failed
    transaction restores only its items, a Query reads only its partition (embedded_partitions), and the
    item requests' answers are written as the JSON they are (embedded_json)."""
    from .embedded_json import install_plain_json
    from .embedded_partitions import install_partition_queries

    install_item_rollback()
    install_partition_queries()
    install_plain_json()


def install_item_rollback() -> None:
    """Make moto's failed transactions restore only the items they touched (and drop the stream records
    of the writes they had applied).

    moto backs up every table of a transaction with a deep copy before it starts, so each transaction
    costs time in proportion to the table (measured here: 20 approval loops took 6 s on a new table and
    46 s once it held 500 items). Served one request at a time, keeping the touched items is equivalent.
    """
    import copy
    import types

    from moto.dynamodb import models
    from moto.dynamodb.models.table import Table

    backend = models.DynamoDBBackend
    if getattr(backend.transact_write_items, "_item_rollback", False):
        return
    original = backend.transact_write_items
    # the original's whole-table backup becomes a no-op; the items are restored below instead
    models.copy = types.SimpleNamespace(  # type: ignore[attr-defined,assignment]
        deepcopy=lambda value, *a: value if isinstance(value, Table) else copy.deepcopy(value, *a)
    )

    def transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> None:
        touched = []
        # the stream records of the writes applied before a failing one go too (the original restores
        # the whole table, its stream with it): a refused transaction publishes nothing
        streams = {
            id(table.stream_shard): (table.stream_shard, len(table.stream_shard.items))
            for table in self.tables.values()
            if getattr(table, "stream_shard", None) is not None
        }
        for entry in transact_items:
            for op in entry.values():
                if not isinstance(op, dict) or op.get("TableName") not in self.tables:
                    continue
                table = self.get_table(op["TableName"])
                key = op.get("Key") or {
                    attr: op["Item"][attr]
                    for attr in (table.hash_key_attr, table.range_key_attr)
                    if attr and attr in op.get("Item", {})
                }
                try:
                    hash_key, range_key = self.get_keys_value(table, key)
                except Exception:  # an invalid key: the original reports it
                    continue
                touched.append(
                    (table, hash_key, range_key, copy.deepcopy(table.get_item(hash_key, range_key)))
                )
        try:
            original(self, transact_items)
        except Exception:
            for table, hash_key, range_key, item in reversed(touched):
                _restore(table, hash_key, range_key, item)
            for shard, length in streams.values():
                del shard.items[length:]
            raise

    transact_write_items._item_rollback = True  # type: ignore[attr-defined]
    backend.transact_write_items = transact_write_items  # type: ignore[method-assign]


def _restore(table: Any, hash_key: Any, range_key: Any, item: Any) -> None:
    from .embedded_partitions import touched

    _put_back(table, hash_key, range_key, item)
    touched(table, hash_key, range_key)  # the index maps follow the item put back


def _put_back(table: Any, hash_key: Any, range_key: Any, item: Any) -> None:
    if range_key is None:
        if item is None:
            table.items.pop(hash_key, None)
        else:
            table.items[hash_key] = item
    elif item is None:
        table.items[hash_key].pop(range_key, None)
    else:
        table.items[hash_key][range_key] = item


WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
_REFUSED = b'{"__type":"AccessDeniedException","message":"not for web pages (no CORS, Origin or other Host)"}'


def no_browsers(app: WSGIApp, port: int) -> WSGIApp:
    """`app` closed to web pages: moto's server answers every origin through CORS, so any page could read
    and write the records. A preflight (OPTIONS), a request with an Origin header (browsers send one with
    every cross-origin request but a plain GET) or one naming another Host (DNS rebinding) is refused with
    403, and no answer carries an Access-Control-* header. boto3 sends none of these."""
    hosts = {f"127.0.0.1:{port}", f"localhost:{port}"}

    def guarded(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        foreign = str(environ.get("HTTP_HOST", "")).lower() not in hosts
        if environ.get("REQUEST_METHOD") == "OPTIONS" or "HTTP_ORIGIN" in environ or foreign:
            length = str(len(_REFUSED))
            start_response(
                "403 Forbidden", [("Content-Type", "application/x-amz-json-1.0"), ("Content-Length", length)]
            )
            return [_REFUSED]

        def without_cors(status: str, headers: list[tuple[str, str]], *rest: Any) -> Any:
            kept = [(k, v) for k, v in headers if not k.lower().startswith("access-control-")]
            return start_response(status, kept, *rest)

        return app(environ, without_cors)

    return guarded


def make_server(port: int = 0) -> Any:
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
    from werkzeug.serving import make_server as werkzeug_server

    prepare_moto()
    app = DomainDispatcherApplication(create_backend_app)
    server = werkzeug_server("127.0.0.1", port, app, threaded=False)
    server.app = no_browsers(server.app, server.server_port)
    return server


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    args = parser.parse_args(argv)
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no line per request
    server = make_server(args.port)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print(f"http://127.0.0.1:{server.server_port}", flush=True)
    try:
        server.serve_forever()
    finally:
        server.server_close()


@contextmanager
def embedded_dynamodb() -> Iterator[str]:
    """Run the server in a child process; yields its URL on 127.0.0.1 and stops it on exit."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "beam_store.embedded", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=dict(os.environ, PYTHONUNBUFFERED="1"),
    )
    assert proc.stdout is not None
    stdout = proc.stdout
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: lines.put(stdout.readline()), daemon=True).start()
    try:
        try:
            url = lines.get(timeout=START_TIMEOUT_SECONDS).strip()
        except queue.Empty:
            url = ""
        if not url.startswith("http://127.0.0.1:"):
            raise RuntimeError(
                f"the embedded DynamoDB did not start (it said {url!r}); is the dev extra installed?"
            )
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


if __name__ == "__main__":
    main()

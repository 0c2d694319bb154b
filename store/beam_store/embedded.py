"""An embedded DynamoDB-compatible server on 127.0.0.1: moto's app, one request at a time.

moto's stock server is threaded and was seen to let two conditional writes of one item both win;
served one request at a time it has no such race and keeps transactions. Needs the `dev` extra.

    python -m beam_store.embedded [--port 0]   # prints its URL once it is listening
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from typing import Any


def make_server(port: int = 0) -> Any:
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
    from werkzeug.serving import make_server as werkzeug_server

    app = DomainDispatcherApplication(create_backend_app)
    return werkzeug_server("127.0.0.1", port, app, threaded=False)


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


if __name__ == "__main__":
    main()

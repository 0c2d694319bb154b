"""One `riverbeam dev` process: checks, the stack's secret, the table, queues and bus, the handlers'
environment, then uvicorn serving the app behind its door beside the queue poller, the stream's tail and the
snapshots, until Ctrl-C or SIGTERM."""

from __future__ import annotations

import contextlib
import errno
import functools
import logging
import os
import signal
import socket
import subprocess
import tempfile
import threading
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

import uvicorn

from ..stack_secret import SecretError, page_url, stack_secret
from . import template as template_module
from .lock import DataDirLocked, data_dir_lock
from .stream_tails import channels_line, stream_tails

if TYPE_CHECKING:
    from .aws_setup import LocalAws
    from .functions import Functions
    from .queue_poller import Poller
    from .services import Queues

log = logging.getLogger("riverbeam_local")
HOST = "127.0.0.1"
SNAPSHOT_FILE = "records.json"
SNAPSHOT_SECONDS = 2.0
DATA_DIR_MODE = 0o700
# how long a stop waits for the worker batches in flight, then for open requests
DRAIN_SECONDS = 30
GRACEFUL_SECONDS = 10


class StartError(Exception):
    """Why the stack cannot start, in one line for the person who started it."""


def prepare_data_dir(path: Path) -> Path:
    path = path.expanduser().absolute()
    if path.exists() and not path.is_dir():
        raise StartError(f"the data dir {path} is a file, not a directory")
    try:
        path.mkdir(mode=DATA_DIR_MODE, parents=True, exist_ok=True)  # a new one is its user's alone
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as error:
        raise StartError(f"the data dir {path} is not writable ({error.strerror or error})") from None
    return path


def bind(port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    # a restart may reuse the port while the last run's connections linger in TIME_WAIT
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((HOST, port))
    except OSError as error:
        sock.close()
        if error.errno == errno.EADDRINUSE:
            raise StartError(f"port {port} on {HOST} is in use (choose another with --port)") from None
        raise StartError(f"cannot listen on {HOST}:{port} ({error.strerror or error})") from None
    return sock


def _aws_defaults() -> None:
    """A region and credentials where none are configured (boto3 needs some to make a client; the requests
    to the embedded services are signed with the stack's key whatever they are, and the management API's
    client needs a region)."""
    import boto3

    session = boto3.Session()
    if not session.region_name:
        os.environ["AWS_DEFAULT_REGION"] = "us-east-1"
    if session.get_credentials() is None:
        os.environ.update(AWS_ACCESS_KEY_ID="local", AWS_SECRET_ACCESS_KEY="local")


def _handler_environment(template: template_module.Template, **local: str) -> None:
    """What template.yaml gives the functions, with local values for what it computes at deploy time."""
    os.environ.update(template.literal_environment)
    os.environ.update(local)
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")  # the stack logs one line per request itself
    os.environ.setdefault("RIVERBEAM_MODEL", "offline")  # works with no account; a real model is opt-in
    os.environ.update(POWERTOOLS_TRACE_DISABLED="true", POWERTOOLS_METRICS_DISABLED="true")
    warnings.filterwarnings("ignore", "No application metrics to publish")


class DevServer(uvicorn.Server):
    """uvicorn's server, but a signal first drains the worker (`drain`), and the process then ends with 0
    (uvicorn raises the signal again after its shutdown)."""

    def __init__(
        self, config: uvicorn.Config, on_ready: Callable[[], None], drain: Callable[[], Any]
    ) -> None:
        super().__init__(config)
        self._on_ready = on_ready
        self._drain = drain
        self._stopping = False

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        handled = (signal.SIGINT, signal.SIGTERM)
        original = {sig: signal.signal(sig, self.handle_exit) for sig in handled}
        try:
            yield
        finally:
            for sig, handler in original.items():
                signal.signal(sig, handler)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if self._stopping:  # a second Ctrl-C: stop now
            self.should_exit = self.force_exit = True
            return
        self._stopping = True
        log.info("stopping")

        def drain_then_exit() -> None:
            try:
                self._drain()
            finally:
                self.should_exit = True

        threading.Thread(target=drain_then_exit, name="drain", daemon=True).start()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        if self.started and not self.should_exit:
            self._on_ready()


def _print_ready(
    port: int,
    data_dir: Path,
    endpoints: dict[str, str],
    secret: str,
    traces: Path | None = None,
    aws_env: Path | None = None,
) -> None:
    """The stack's URLs, one a line; `aws_env`: the file a script sources to reach the embedded AWS
    endpoints (the banner names it, never the key it holds)."""
    lines = [
        f"HTTP API:        http://{HOST}:{port}/",
        f"WebSocket API:   ws://{HOST}:{port}/ws",
        f"Management API:  http://{HOST}:{port}/@connections/{{id}}",
        f"Inbox page:      {page_url(f'http://{HOST}:{port}/', secret)}",
        *(f"{name + ':':<16} {url}" for name, url in endpoints.items()),
        *([f"AWS env file:    {aws_env} (source it to reach the embedded endpoints)"] if aws_env else []),
        channels_line(),
        f"Data dir:        {data_dir}",
        *([f"Traces:          {data_dir / traces}"] if traces is not None else []),
        "Ready (Ctrl-C stops).",
    ]
    print("\n".join(lines), flush=True)


def _raise_interrupt(sig: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


@contextlib.contextmanager
def _stopped_by_signals() -> Iterator[None]:
    """Before and after uvicorn serves, SIGTERM stops the stack as Ctrl-C does."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def run(
    port: int,
    data_dir: Path,
    *,
    model: str = "offline",
    agents_file: Path | None = None,
    sweep_seconds: float = 30.0,
    traces: Path | None = None,
    auth: str = "none",
) -> int:
    """Serve until a signal. `model`: offline, or bedrock (with this machine's AWS credentials);
    `agents_file`: the agents (default: the repository's agents.yaml); `sweep_seconds`: how often the
    template's scheduled functions (the sweep) run; `traces`: where in the data dir the spans are kept,
    for the banner (None: they are not); `auth`: the AuthMode, `jwt` with a user pool (user_pool)."""
    agents = (agents_file or template_module.ROOT / "agents.yaml").expanduser().resolve()
    if not agents.is_file():
        raise StartError(f"the agents file {agents} does not exist")
    from riverbeam.agent.config import ConfigError, configured_runners

    try:  # a wrong file is told before anything starts
        configured_runners(agents, work_tree=data_dir / "work", offline=True)
    except ConfigError as error:
        raise StartError(str(error)) from None
    os.environ.update(RIVERBEAM_MODEL=model, RIVERBEAM_AGENTS_FILE=str(agents))
    with _stopped_by_signals(), contextlib.ExitStack() as stack:
        data_dir = prepare_data_dir(data_dir)
        try:  # before anything else touches the data dir: one stack per data dir
            stack.enter_context(data_dir_lock(data_dir))
        except DataDirLocked as error:
            raise StartError(str(error)) from None
        try:
            secret = stack_secret(data_dir)
        except SecretError as error:
            raise StartError(str(error)) from None
        sock = bind(port)
        stack.callback(sock.close)
        port = sock.getsockname()[1]
        try:
            template = template_module.load()
        except (OSError, ValueError, KeyError) as error:
            raise StartError(f"template.yaml cannot be read: {error}") from None
        _aws_defaults()
        return _serve(stack, sock, port, data_dir, template, sweep_seconds, secret, traces, auth)


def _start_stream_tails(stack: contextlib.ExitStack, tails: list[Any]) -> None:
    """Each function's tail of the table's stream, stopped with the stack (after draining)."""
    for tail in tails:
        tail.start()
        stack.callback(tail.stop, DRAIN_SECONDS)


def _serve(
    stack: contextlib.ExitStack,
    sock: socket.socket,
    port: int,
    data_dir: Path,
    template: template_module.Template,
    sweep_seconds: float,
    secret: str,
    traces: Path | None,
    auth: str = "none",
) -> int:
    # imported here: the handlers' libraries read their environment when first imported
    from botocore.exceptions import BotoCoreError, ClientError
    from riverbeam.agent.workspace import prepare_workspace

    from . import snapshot
    from .aws_key import stack_key
    from .aws_setup import aws_env_file, create_resources, start_services
    from .functions import Functions
    from .user_pool import start_pool

    snapshot_path = data_dir / SNAPSHOT_FILE
    try:
        saved = snapshot.read(snapshot_path)
    except snapshot.SnapshotError as error:
        raise StartError(str(error)) from None
    sent, written = threading.Event(), threading.Event()
    key = stack_key(secret)
    try:
        local = start_services(stack, key, data_dir, written, sent)
        dynamodb, sqs, queues = create_resources(local, template, saved, data_dir)
        prepare_workspace(data_dir)
        aws_env = aws_env_file(local, key, data_dir)
        pool = start_pool(local.embedded) if auth == "jwt" else None
    except (OSError, subprocess.SubprocessError, BotoCoreError, ClientError) as error:
        raise StartError(f"the local stack could not be set up: {error}") from None
    _handler_environment(
        template,
        TABLE_NAME=local.table_name,
        QUEUE_URL=queues.url,
        **(pool.environment() if pool else {"AUTH_MODE": "none"}),
        WEBSOCKET_ENDPOINT=f"http://{HOST}:{port}",
        RIVERBEAM_DATA_DIR=str(data_dir),
        # the deployment's path (/opt/agents.yaml, in the layer) is the repository's file here
        RIVERBEAM_AGENTS_FILE=os.environ["RIVERBEAM_AGENTS_FILE"],
        CONTENT_BUCKET=local.content_bucket,
        EVENT_BUS_NAME=local.bus_name,
        MAIL_LINK_BASE=f"http://{HOST}:{port}",
    )
    functions = Functions(template.functions)
    _make_shared_clients()
    if local.embedded is not None:
        _keep_snapshots(local, snapshot_path, queues)
    # approval events (stream -> events function -> bus): stopped after the worker, before the last snapshot
    _start_stream_tails(stack, stream_tails(dynamodb, local.table_name, template, functions, written))
    poller = _start_workers(stack, sqs, queues, template, functions, sent, sweep_seconds)
    shown = {**local.endpoints, **(pool.banner(f"http://{HOST}:{port}", data_dir) if pool else {})}
    ready = functools.partial(_print_ready, port, data_dir, shown, secret, traces, aws_env)
    app = _behind_door(template, functions, port, secret, pool)
    return _serve_http(sock, app, ready, drain=lambda: poller.stop(DRAIN_SECONDS))


def _behind_door(
    template: template_module.Template, functions: Any, port: int, secret: str, pool: Any
) -> Any:
    """The stack's app behind its door; with a user pool (`--auth jwt`) its /login.json served, and tokens
    checked instead of the secret."""
    from .asgi_app import Api, create_app
    from .door import Door

    api = Api(template, functions, login=pool.login() if pool else None)
    return Door(create_app(api), port, secret, verifier=pool.verifier() if pool else None)


def _make_shared_clients() -> None:
    """The handlers' cached factories are not meant to race: make them once, before any request."""
    from riverbeam.aws import runtime

    runtime.beam(), runtime.sqs(), runtime.management_api(), runtime.events_client()


def _keep_snapshots(local: LocalAws, path: Path, queues: Queues) -> None:
    """The embedded services' records (and the content bucket's objects) saved under the data dir, by the
    embedded services' process (its last snapshot when it stops, after everything else has)."""
    assert local.embedded is not None  # the caller's check
    names = {"jobs": queues.url.rsplit("/", 1)[-1], "dead": queues.dead_letter_url.rsplit("/", 1)[-1]}
    bucket = local.content_bucket if local.embeds("S3") else None
    local.embedded.keep_snapshots(path, local.table_name, names, bucket, SNAPSHOT_SECONDS)


def _start_workers(
    stack: contextlib.ExitStack,
    sqs: Any,
    queues: Queues,
    template: template_module.Template,
    functions: Functions,
    sent: threading.Event,
    sweep_seconds: float,
) -> Poller:
    """The worker's event source, then the scheduled functions; each stopped by `stack`."""
    from .queue_poller import Poller
    from .schedule import Scheduler

    consumer = template.queue_consumer
    poller = Poller(
        sqs,
        queues.url,
        queues.arn,
        lambda event: functions.call(consumer, event),
        wake=sent,
        batch_size=template.batch_size,
    )
    poller.start()
    stack.callback(poller.stop, DRAIN_SECONDS)
    scheduler = Scheduler(functions.call, template.scheduled, sweep_seconds)
    scheduler.start()
    stack.callback(scheduler.stop)
    return poller


def _serve_http(sock: socket.socket, app: Any, ready: Callable[[], None], drain: Callable[[], Any]) -> int:
    """uvicorn serving `app` on `sock` until a signal, which first drains the worker."""
    config = uvicorn.Config(
        app,
        ws="websockets-sansio",
        lifespan="off",
        log_config=None,
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=GRACEFUL_SECONDS,
    )
    DevServer(config, on_ready=ready, drain=drain).run(sockets=[sock])
    return 0

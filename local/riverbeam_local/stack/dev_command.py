"""`riverbeam dev [--port P] [--data-dir D]`: the local stack's command line."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path
from typing import Any

from aws_lambda_powertools.logging.formatter import RESERVED_LOG_ATTRS, LambdaPowertoolsFormatter
from aws_lambda_powertools.metrics.provider import cold_start

from ..clients.trace_tree import TRACES_FILE
from ..display import visible
from ..stack_secret import DEFAULT_DATA_DIR, SECRET_VARIABLE
from .user_pool import add_auth_option

DEFAULT_PORT = 3000
# how often the local stack runs the sweep (the template's SweepSchedule is a minute)
DEFAULT_SWEEP_SECONDS = 30.0


def parser() -> argparse.ArgumentParser:
    found = argparse.ArgumentParser(
        prog="riverbeam dev",
        description="Riverbeam's HTTP API, WebSocket API and management API on 127.0.0.1, routed to the "
        "handlers of functions/ as template.yaml declares them, with an embedded DynamoDB and SQS "
        "(unless AWS_ENDPOINT_URL_DYNAMODB / AWS_ENDPOINT_URL_SQS name others) and AuthMode none (or jwt:"
        f" --auth). Each request carries the stack's secret: ${SECRET_VARIABLE} where set, else one kept in "
        "the data dir's `secret` file; the page's URL printed at start carries it. The embedded AWS "
        "endpoints answer only requests signed with the stack's AWS key (derived from the secret), which "
        "the data dir's `aws.env` exports for your own scripts.",
    )
    found.add_argument(
        "--port",
        type=int,
        default=DEFAULT_PORT,
        help="the port on 127.0.0.1 (default: %(default)s; 0: any free one)",
    )
    found.add_argument(
        "--data-dir",
        type=Path,
        default=DEFAULT_DATA_DIR,
        help="where the records, the secret, the author agent's work tree and its bare remote are kept "
        "(default: %(default)s)",
    )
    found.add_argument(
        "--model",
        choices=["offline", "bedrock"],
        default="offline",
        help="offline: the offline models, no account needed (default); bedrock: the models agents.yaml "
        "names, on Amazon Bedrock with this machine's AWS credentials and region",
    )
    found.add_argument(
        "--agents",
        type=Path,
        default=None,
        metavar="FILE",
        help="the agents file (default: the repository's agents.yaml)",
    )
    found.add_argument(
        "--debug",
        action="store_true",
        help="the handlers log at DEBUG, and every logged error comes with its traceback (by default an "
        "error is one line: its message, key fields, and the exception's type and message)",
    )
    found.add_argument(
        "--traces",
        action="store_true",
        help="keep the handlers' spans (OpenTelemetry, GenAI conventions) as OTLP JSON lines in "
        "<data dir>/traces/spans.jsonl, readable by you alone; `riverbeam trace [ID]` prints a run's or a "
        "session's from there",
    )
    add_auth_option(found)
    found.add_argument(
        "--sweep-seconds",
        type=float,
        default=DEFAULT_SWEEP_SECONDS,
        metavar="S",
        help="how often the sweep expires the pending actions past their time (default: %(default)s)",
    )
    return found


# what every Powertools record carries, or Lambda's context adds: said by the line itself, or noise here
NOT_KEY_FIELDS = frozenset(
    {
        *RESERVED_LOG_ATTRS,
        "message",
        "taskName",
        "service",
        "sampling_rate",
        "xray_trace_id",
        "correlation_id",
        "cold_start",
        "function_arn",
        "function_memory_size",
        "function_request_id",
        "exception",
        "exception_name",
        "exception_notes",
        "stack_trace",
    }
)
TIME_FORMAT = "%H:%M:%S"
MESSAGE_CHARACTERS = 200
FIELD_CHARACTERS = 100


def _cut(text: str, limit: int) -> str:
    """`text` on one line, at most `limit` characters (cut, then escaped: no escape is cut in half)."""
    return visible(text if len(text) <= limit else text[: limit - 3] + "...")


def _exception_note(record: logging.LogRecord) -> str:
    """An exception in a few words: ` (ClientError: An error occurred ...)`."""
    if not record.exc_info or record.exc_info[1] is None:
        return ""
    error = record.exc_info[1]
    return f" ({type(error).__name__}: {_cut(str(error), MESSAGE_CHARACTERS)})"


class StackFormatter(logging.Formatter):
    """The stack's own lines (`15:23:02 POST /invoke 202 31 ms`), or `fmt`'s; an error's traceback only with
    `tracebacks`, otherwise its exception's type and message on the same line."""

    def __init__(self, tracebacks: bool, fmt: str = "%(asctime)s %(message)s") -> None:
        super().__init__(fmt, TIME_FORMAT)
        self.tracebacks = tracebacks

    def format(self, record: logging.LogRecord) -> str:
        if self.tracebacks or not record.exc_info:
            return super().format(record)
        message = _cut(record.getMessage(), MESSAGE_CHARACTERS)
        bare = logging.makeLogRecord(
            {**record.__dict__, "msg": message, "args": None, "exc_info": None, "exc_text": None}
        )
        return super().format(bare) + _exception_note(record)


class HandlerFormatter(LambdaPowertoolsFormatter):
    """The handlers' Powertools records as one readable line each instead of JSON:
    `15:23:02 WARNING riverbeam.aws.worker: queue message failed code=BEM-500 (KeyError: 'x')`. Keys
    appended with append_keys and a line's extra are its key fields; a traceback follows only with
    `tracebacks`."""

    def __init__(self, tracebacks: bool) -> None:
        super().__init__(datefmt=TIME_FORMAT)
        self.tracebacks = tracebacks

    def _fields(self, record: logging.LogRecord) -> dict[str, Any]:
        extra = {k: v for k, v in record.__dict__.items() if k not in RESERVED_LOG_ATTRS}
        found = {**self.get_current_keys(), **self.thread_safe_get_current_keys(), **extra}
        return {k: v for k, v in found.items() if k not in NOT_KEY_FIELDS and v is not None}

    def format(self, record: logging.LogRecord) -> str:
        when = logging.Formatter.formatTime(self, record, TIME_FORMAT)
        fields = "".join(f" {k}={_cut(str(v), FIELD_CHARACTERS)}" for k, v in self._fields(record).items())
        message = _cut(record.getMessage(), MESSAGE_CHARACTERS)
        line = f"{when} {record.levelname} {record.name}: {message}{fields}{_exception_note(record)}"
        if self.tracebacks and record.exc_info:
            return line + "\n" + self.formatException(record.exc_info)
        return line


def _logging(debug: bool) -> None:
    """The stack's lines and its handlers' on stderr, one readable line per request, event and error."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(StackFormatter(tracebacks=debug))
    log = logging.getLogger("riverbeam_local")
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False
    # any other library's warnings (the server's, the AWS clients'), made before Powertools filters the
    # root logger's handlers of its own records
    others = logging.StreamHandler(sys.stderr)
    others.setFormatter(StackFormatter(debug, "%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.getLogger().addHandler(others)
    # the handlers log little (the stack logs each request itself): warnings and errors, or everything
    # with --debug; set before their Powertools logger is made, which reads it
    if debug:
        os.environ["POWERTOOLS_LOG_LEVEL"] = "DEBUG"
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    from riverbeam.aws import runtime

    powertools = runtime.logger.registered_handler
    powertools.setFormatter(HandlerFormatter(tracebacks=debug))
    if isinstance(powertools, logging.StreamHandler):
        powertools.setStream(sys.stderr)
    # no metrics are published here (POWERTOOLS_METRICS_DISABLED), but Powertools prints its cold-start
    # metric as JSON whatever that says: the stack's processes start warm
    cold_start.is_cold_start = False


def main(argv: list[str] | None = None) -> int:
    if argv and argv[0] == "add-user":
        from .user_pool import add_user_main

        return add_user_main(argv[1:])
    args = parser().parse_args(argv)
    if not 0 <= args.port <= 65535:
        print(f"riverbeam dev: --port {args.port} is not a port number", file=sys.stderr)
        return 2
    if not 0 < args.sweep_seconds <= 86400:
        print(f"riverbeam dev: --sweep-seconds {args.sweep_seconds} is not in (0, 86400]", file=sys.stderr)
        return 2
    if args.model == "bedrock":
        from .bedrock_check import bedrock_problem

        problem = bedrock_problem()
        if problem is not None:
            print(f"riverbeam dev: {problem}", file=sys.stderr)
            return 2
    _logging(args.debug)
    from .server import StartError, run

    try:
        traces = _keep_traces(args.data_dir) if args.traces else None
    except OSError as error:
        place = args.data_dir.expanduser() / TRACES_FILE
        print(
            f"riverbeam dev: the traces file {place} cannot be opened ({error.strerror or error})",
            file=sys.stderr,
        )
        return 2
    try:
        return run(
            args.port,
            args.data_dir,
            model=args.model,
            agents_file=args.agents,
            sweep_seconds=args.sweep_seconds,
            traces=TRACES_FILE if args.traces else None,
            auth=args.auth,
        )
    except StartError as error:
        print(f"riverbeam dev: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # stopped before it was serving: nothing to say
        return 0
    finally:
        if traces is not None:
            traces.shutdown()


def _keep_traces(data_dir: Path) -> Any:
    """The tracer provider that writes the spans to the data dir (OpenTelemetry's SDK, imported only
    with --traces)."""
    from .trace_file import keep_traces

    return keep_traces(data_dir.expanduser())

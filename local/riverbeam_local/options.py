"""The flags every client command takes: where the API is, the stack's secret, and who is calling (AuthMode
`none`)."""

from __future__ import annotations

import argparse
import getpass
import os

from .client import DEFAULT_URL
from .stack_secret import DEFAULT_DATA_DIR, SECRET_FILE, SECRET_VARIABLE


def default_user() -> str:
    try:
        return os.environ.get("USER") or getpass.getuser()
    except (KeyError, OSError):  # no name for this uid
        return "local"


def add_connection_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--url", default=DEFAULT_URL, help="the stack's HTTP API (default: %(default)s; see riverbeam dev)"
    )
    parser.add_argument(
        "--secret",
        help=f"the stack's secret (default: ${SECRET_VARIABLE}, else {DEFAULT_DATA_DIR / SECRET_FILE})",
    )
    parser.add_argument("--user", default=default_user(), help="who you are (default: $USER)")

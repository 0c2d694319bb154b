"""The flags every client command takes: where the API is, the stack's secret or a token (AuthMode `jwt`),
and who is calling (AuthMode `none`)."""

from __future__ import annotations

import argparse
import getpass
import os
import urllib.parse

from ..display import visible
from ..stack_secret import DEFAULT_DATA_DIR, SECRET_FILE, SECRET_VARIABLE, find_secret, is_loopback
from .client import DEFAULT_URL, ApiClient, ApiError, ClientError
from .tokens_file import TOKEN_VARIABLE, find_token, read_entries, stack_key, tokens_path

SHOWN_URL_CHARS = 200


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
    parser.add_argument(
        "--token",
        help=f"a JWT for a stack with AuthMode jwt, sent instead of the secret (default: ${TOKEN_VARIABLE},"
        f" else the one riverbeam login kept in {tokens_path()})",
    )
    parser.add_argument(
        "--user", default=default_user(), help="who you are (default: $USER; with a token, whom it names)"
    )


def api_client(args: argparse.Namespace, groups: tuple[str, ...] = ()) -> ApiClient:
    """The client the options name: a token where one is given or kept for --url, else the secret.
    TokenProblem (a ClientError) where the token cannot be sent."""
    secret = find_secret(args.secret, url=args.url)
    kept_only = not args.token and not os.environ.get(TOKEN_VARIABLE)
    if kept_only and secret and is_loopback(args.url) and not takes_tokens(args.url):
        return ApiClient(args.url, args.user, secret=secret, groups=groups)
    token = find_token(args.token, args.url)
    return ApiClient(args.url, args.user, secret=None if token else secret, groups=groups, token=token)


def takes_tokens(url: str) -> bool:
    """Whether a stack that kept tokens are sent to asks for them: a local stack started without --auth jwt
    since the sign-in answers its /login.json as any route, asking for its secret (BEM-033). Asked only where
    the tokens file has an entry for `url`."""
    if stack_key(url) not in read_entries():
        return True
    try:
        ApiClient(url, "probe").request("GET", "/login.json")
    except ApiError as error:
        return error.code != "BEM-033"
    except ClientError:  # out of reach: the command itself says so
        return True
    return True


def url_problem(url: str) -> str | None:
    """Why `url` cannot be the stack's HTTP API (one line, for a usage error), or None."""
    shown = "'" + visible(url[:SHOWN_URL_CHARS] + ("..." if len(url) > SHOWN_URL_CHARS else "")) + "'"
    example = f"(for example {DEFAULT_URL})"
    if any(c.isspace() or not c.isprintable() for c in url):
        return f"--url {shown} holds spaces or control characters"
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port  # checked here: an out of range or non-numeric port raises
    except ValueError as error:
        return f"--url {shown} is not a URL ({error}) {example}"
    if parts.scheme not in ("http", "https"):
        return f"--url {shown} is not an http:// or https:// URL {example}"
    if not parts.hostname:
        return f"--url {shown} names no host {example}"
    if port == 0:
        return f"--url {shown} names port 0 {example}"
    if parts.query or parts.fragment:
        return f"--url {shown} has a query or fragment: give the API's base URL {example}"
    return None

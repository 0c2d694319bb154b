"""The token a client sends to a stack with AuthMode `jwt` (CONTRACT 18): `--token`, else `RIVERBEAM_TOKEN`,
else the entry `riverbeam login` kept for the stack's URL in `$XDG_CONFIG_HOME/riverbeam/tokens.json` (else
`~/.config/riverbeam/`), mode 0600, whose ID token is renewed with its refresh token once it has expired.
A token is read here only to tell its expiry and whom it names; the stack alone verifies it."""

from __future__ import annotations

import base64
import json
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .client import ClientError

TOKEN_VARIABLE = "RIVERBEAM_TOKEN"
KEPT = "the tokens file"  # a Token's source: what `riverbeam login` kept
TOKENS_FILE = "tokens.json"
FILE_MODE, DIR_MODE = 0o600, 0o700
# an ID token this close to its expiry is renewed first: it could lapse on the way
EXPIRY_MARGIN_SECONDS = 30
Json = dict[str, Any]


def config_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path("~/.config").expanduser())
    return Path(base) / "riverbeam"


def tokens_path() -> Path:
    return config_dir() / TOKENS_FILE


def stack_key(url: str) -> str:
    """One entry per stack: its URL without the trailing slash."""
    return url.rstrip("/")


def login_hint(url: str) -> str:
    return f"run `riverbeam login --url {stack_key(url)}`"


def claims_of(token: str) -> Json | None:
    """The token's payload, unverified (None where it is no JWT): for its expiry and whom it names."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        payload = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except ValueError:
        return None
    return payload if isinstance(payload, dict) else None


def expired(token: str, margin: float = 0) -> bool:
    exp = (claims_of(token) or {}).get("exp")
    return isinstance(exp, int | float) and exp <= time.time() + margin


@dataclass(frozen=True)
class Token:
    """A JWT to send, where it came from (`--token`, `RIVERBEAM_TOKEN` or the tokens file) and the stack's
    URL, so that a refusal can say what to do."""

    text: str = field(repr=False)
    source: str
    url: str

    def remedy(self) -> str:
        if self.source == "--token":
            return f"give a valid one with --token (or {login_hint(self.url)})"
        if self.source == TOKEN_VARIABLE:
            return f"set {TOKEN_VARIABLE} to a valid one (or unset it and {login_hint(self.url)})"
        return login_hint(self.url)

    def identities(self) -> set[str]:
        """Whom the token names, as a stack may call them (its UserIdClaim: sub, or the user name)."""
        claims = claims_of(self.text) or {}
        names = (claims.get(n) for n in ("cognito:username", "username", "sub"))
        return {n for n in names if isinstance(n, str) and n}

    def user(self) -> str | None:
        claims = claims_of(self.text) or {}
        found = claims.get("cognito:username") or claims.get("username") or claims.get("sub")
        return found if isinstance(found, str) else None


class TokenProblem(ClientError):
    """A token that cannot be sent (expired, not a JWT, a sign-in that lapsed), in one line."""


def read_entries(path: Path | None = None) -> dict[str, Json]:
    path = path or tokens_path()
    try:
        found = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as error:
        raise TokenProblem(
            f"the tokens file {path} cannot be read ({error}): delete it and sign in again"
        ) from None
    return {k: v for k, v in found.items() if isinstance(v, dict)} if isinstance(found, dict) else {}


def save_entry(url: str, entry: Json, path: Path | None = None) -> Path:
    """The stack's entry written, the others kept: a whole new file (0600) put in place at once."""
    path = path or tokens_path()
    path.parent.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    entries = {**read_entries(path), stack_key(url): entry}
    descriptor, draft = tempfile.mkstemp(dir=path.parent, prefix=".tokens-")  # mkstemp makes it 0600
    try:
        with os.fdopen(descriptor, "w") as file:
            json.dump(entries, file, indent=1)
        os.chmod(draft, FILE_MODE)
        os.replace(draft, path)
    except BaseException:
        os.unlink(draft)
        raise
    return path


def _given(text: str, source: str, url: str) -> Token:
    token = Token(text.strip(), source, url)
    if claims_of(token.text) is None:
        raise TokenProblem(f"the token of {source} is not a JWT: {token.remedy()}")
    if expired(token.text):
        raise TokenProblem(f"the token of {source} has expired: {token.remedy()}")
    return token


def find_token(given: str | None, url: str) -> Token | None:
    """The token to send to `url`: --token, else RIVERBEAM_TOKEN, else the tokens file's (renewed where its
    ID token has expired); None where there is none (the stack's secret is sent instead)."""
    if given:
        return _given(given, "--token", url)
    if os.environ.get(TOKEN_VARIABLE):
        return _given(os.environ[TOKEN_VARIABLE], TOKEN_VARIABLE, url)
    entry = read_entries().get(stack_key(url))
    if entry is None or not isinstance(entry.get("id_token"), str):
        return None
    if expired(entry["id_token"], EXPIRY_MARGIN_SECONDS):
        from .cognito import renewed

        entry = renewed(url, entry)
        save_entry(url, entry)
    return Token(entry["id_token"], KEPT, url)

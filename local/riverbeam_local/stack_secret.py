"""The local stack's secret (Jupyter's token model): `RIVERBEAM_DEV_SECRET` where set, otherwise a random one
kept in `<data dir>/secret`, readable by its owner alone and the same after a restart. The stack makes it;
the clients find it (`--secret`, the variable, the default data dir's file)."""

from __future__ import annotations

import ipaddress
import os
import re
import secrets
import stat
import tempfile
import urllib.parse
from pathlib import Path

SECRET_VARIABLE = "RIVERBEAM_DEV_SECRET"
SECRET_FILE = "secret"
FILE_MODE = 0o600
# visible ASCII only: it travels in a header and a URL; long enough that guessing it is hopeless
SECRET_PATTERN = re.compile(r"[\x21-\x7e]{16,512}")
DEFAULT_DATA_DIR = Path("~/.riverbeam/dev")


class SecretError(Exception):
    """Why the stack's secret cannot be had, in one line."""


def _checked(secret: str, source: str) -> str:
    if not SECRET_PATTERN.fullmatch(secret):
        raise SecretError(f"{source} is not a usable secret (16 to 512 visible ASCII characters, no spaces)")
    return secret


def _created(path: Path) -> str:
    """A new random secret, written whole before it appears (a stack starting beside this one reads it
    complete or not at all)."""
    secret = secrets.token_hex(32)  # 256 bits; hex never starts with "-", which a command line would misread
    descriptor, draft = tempfile.mkstemp(dir=path.parent, prefix=".secret-")  # mkstemp makes it 0600
    try:
        with os.fdopen(descriptor, "w") as file:
            file.write(secret + "\n")
        os.chmod(draft, FILE_MODE)
        os.link(draft, path)  # fails where another start made one first: that one is read
    except FileExistsError:
        return _read(path)
    finally:
        os.unlink(draft)
    return secret


def _read(path: Path) -> str:
    info = path.lstat()
    if not stat.S_ISREG(info.st_mode):
        raise SecretError(f"{path} is not a regular file (delete it to get a new secret)")
    if stat.S_IMODE(info.st_mode) != FILE_MODE:
        os.chmod(path, FILE_MODE)  # readable by its owner alone, whatever made it
    return _checked(path.read_text().strip(), f"{path} (delete it to get a new secret)")


def stack_secret(data_dir: Path) -> str:
    """The secret a stack on `data_dir` requires: the variable's where set, else the data dir's file
    (made on first start)."""
    given = os.environ.get(SECRET_VARIABLE)
    if given:
        return _checked(given, SECRET_VARIABLE)
    path = data_dir / SECRET_FILE
    try:
        return _read(path) if path.exists() or path.is_symlink() else _created(path)
    except OSError as error:
        raise SecretError(f"the secret file {path} cannot be used ({error.strerror or error})") from None


def is_loopback(url: str) -> bool:
    """Whether `url` names this machine (127.0.0.0/8, ::1 or localhost)."""
    host = urllib.parse.urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def find_secret(
    given: str | None = None, data_dir: Path = DEFAULT_DATA_DIR, *, url: str | None = None
) -> str | None:
    """The secret a client sends: `given` (--secret), else the variable, else the data dir's file; None
    when there is none (the stack then says what it wants). The file is read only for a `url` on this
    machine, so a client pointed elsewhere never hands a server the local stack's secret unasked."""
    if given:
        return given
    if os.environ.get(SECRET_VARIABLE):
        return os.environ[SECRET_VARIABLE]
    if url is not None and not is_loopback(url):
        return None
    try:
        return (data_dir.expanduser() / SECRET_FILE).read_text().strip() or None
    except (OSError, UnicodeDecodeError):
        return None


def page_url(http_url: str, secret: str) -> str:
    """The page's URL with the secret in the fragment, which a browser never sends to a server."""
    return f"{http_url.rstrip('/')}/#secret={urllib.parse.quote(secret, safe='')}"


def secret_in_url(url: str) -> str | None:
    """The secret that `page_url` put in `url`'s fragment, or None."""
    found = urllib.parse.parse_qs(urllib.parse.urlsplit(url).fragment).get("secret")
    return found[0] if found else None

"""Where the built-in git tools work: a work tree on this machine, pushed to its `origin` (the local stack's
bare remote), or, in the cloud, a clone of a remote under /tmp, made by the first tool that needs it and
pushed to with the credentials of a Secrets Manager secret (JSON `{"username": ..., "password": ...}`,
a token going as the password). The credentials are read for each clone, fetch and push, never written to
disk. A clone is kept up with its remote: before a tool reads or pushes, it is fetched, at most once every
FETCH_INTERVAL_SECONDS (see gitfetch for what moves)."""

from __future__ import annotations

import io
import json
import os
import shutil
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from time import monotonic
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..errors import ToolError
from .redact import redacted

if TYPE_CHECKING:
    from dulwich.repo import Repo

# dulwich (~0.3 s of imports) is loaded by the first tool that touches git, never by an API handler
REMOTE_VARIABLE = "RIVERBEAM_GIT_REMOTE"
SECRET_VARIABLE = "RIVERBEAM_GIT_SECRET"
_LOOPBACK = ("127.0.0.1", "localhost", "::1")
# a clone fetches at most this often: a tool call costs a fetch's round trips and a read of the secret at most
# once in this time, and a remote out of reach stalls at most one call in it
FETCH_INTERVAL_SECONDS = 10.0
# held to make a work tree or fetch into a clone: two threads of a container never do either at once
_making = threading.Lock()


@dataclass(frozen=True)
class _Fetch:
    """A clone's last fetch: when it was tried, when one last worked, and what went wrong with the last."""

    tried: float
    worked: float | None
    failure: str = ""


_fetches: dict[Path, _Fetch] = {}  # by clone


def check_remote_url(url: str) -> str:
    """`url` where it can be a clone's remote: https (http to this machine alone, for tests), with no
    credentials in it (they come from the secret); a ValueError says what is wrong."""
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise ValueError(f"{REMOTE_VARIABLE} must be an https URL, not {redacted(url, '/')!r}")
    if parts.scheme == "http" and parts.hostname not in _LOOPBACK:
        raise ValueError(f"{REMOTE_VARIABLE} must be https (http only to 127.0.0.1)")
    if parts.username is not None or parts.password is not None:
        raise ValueError(
            f"{REMOTE_VARIABLE} must not hold credentials: put them in {SECRET_VARIABLE}'s secret"
        )
    return url


@dataclass(frozen=True)
class Credentials:
    username: str
    password: str = field(repr=False)


@dataclass(frozen=True)
class GitRemote:
    """A remote to clone the work tree from and push to; `secret_id`: the ARN or name of its credentials."""

    url: str
    secret_id: str = ""

    def __post_init__(self) -> None:
        check_remote_url(self.url)

    def credentials(self) -> Credentials | None:
        return read_credentials(self.secret_id) if self.secret_id else None


def read_credentials(secret_id: str, client: Any = None) -> Credentials:
    """The secret's username and password; a secret that cannot be read or holds no such JSON is BEM-351,
    which names the secret and the reason, never its value."""
    import boto3
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        value = (client or boto3.client("secretsmanager")).get_secret_value(SecretId=secret_id)
    except ClientError as error:
        reason = error.response.get("Error", {}).get("Code", "ClientError")
        raise ToolError("BEM-351", f"the git credentials {secret_id!r} cannot be read: {reason}") from None
    except BotoCoreError as error:
        raise ToolError("BEM-351", f"the git credentials {secret_id!r} cannot be read: {error}") from None
    try:
        found = json.loads(value.get("SecretString") or "")
        return Credentials(username=str(found["username"]), password=str(found["password"]))
    except (ValueError, TypeError, KeyError):
        message = f"the git credentials {secret_id!r} are not JSON with a username and a password"
        raise ToolError("BEM-351", message) from None


@dataclass(frozen=True)
class WorkTree:
    """A git work tree; with `clone_from`, cloned from that remote into `path` by its first use; with
    `seeded`, made there by its first use as `prepare_workspace` makes one (a bare `remote.git` beside)."""

    path: Path
    clone_from: GitRemote | None = None
    seeded: bool = False

    @classmethod
    def from_environment(cls, data_dir: str | Path) -> WorkTree:
        """RIVERBEAM_GIT_REMOTE set: a clone of it under `data_dir` (credentials: RIVERBEAM_GIT_SECRET);
        otherwise `data_dir`'s local work tree."""
        url = os.environ.get(REMOTE_VARIABLE, "").strip()
        if not url:
            return cls(Path(data_dir) / "work", seeded=True)
        remote = GitRemote(url, os.environ.get(SECRET_VARIABLE, "").strip())
        return cls(Path(data_dir) / "clone", clone_from=remote)

    def ready(self) -> Path:
        """The work tree, cloned or seeded first where it is one not made yet."""
        if (self.clone_from is not None or self.seeded) and not (self.path / ".git").exists():
            with _making:
                if not (self.path / ".git").exists():
                    self._make()
        return self.path

    def synced(self) -> tuple[Path, str | None]:
        """The work tree, ready; a clone is first brought up to date with its remote where it was not
        fetched in the last FETCH_INTERVAL_SECONDS. With it, a warning where the last fetch failed (the
        tools then work on what the clone has), else None."""
        if self.clone_from is None:
            return self.ready(), None
        with _making:
            if not (self.path / ".git").exists():
                self._make()
            else:
                last = _fetches.get(self.path)
                if last is None or monotonic() - last.tried >= FETCH_INTERVAL_SECONDS:
                    _fetches[self.path] = _fetched(self.clone_from, self.path, last)
            return self.path, _stale_warning(_fetches[self.path])

    def _make(self) -> None:
        from .gitrepo import init_workspace

        if self.clone_from is not None:
            _clone(self.clone_from, self.path)
            now = monotonic()
            _fetches[self.path] = _Fetch(tried=now, worked=now)
        else:
            init_workspace(self.path, self.path.parent / "remote.git")

    def push_location(self, repo: Repo, remote: str) -> tuple[str, Credentials | None]:
        """Where a push goes, and with what credentials: the clone's remote, or `remote` of the config."""
        if self.clone_from is not None:
            return self.clone_from.url, self.clone_from.credentials()
        try:
            url = repo.get_config().get((b"remote", remote.encode()), b"url")
        except KeyError:
            return remote, None  # a path or URL given as the remote
        return url.decode(), None


def as_work_tree(work_tree: str | Path | WorkTree) -> WorkTree:
    return work_tree if isinstance(work_tree, WorkTree) else WorkTree(Path(work_tree))


def _fetched(remote: GitRemote, path: Path, last: _Fetch | None) -> _Fetch:
    """Fetch `remote` into the clone at `path`: how it went, the failure in git's words, never with the
    credentials or a server path."""
    from .gitfetch import FetchFailed, fetch_and_fast_forward
    from .gitpush import PUSH_TIMEOUT_SECONDS
    from .gitrepo import opened

    tried = monotonic()
    try:
        credentials = remote.credentials()
        with opened(path) as repo:
            fetch_and_fast_forward(repo, remote.url, credentials, PUSH_TIMEOUT_SECONDS)
    except (ToolError, FetchFailed) as error:  # ToolError: the secret cannot be read (BEM-351)
        failure = error.message if isinstance(error, ToolError) else str(error)
        return _Fetch(tried, last.worked if last else None, redacted(failure, path))
    return _Fetch(tried, tried)


def _stale_warning(fetch: _Fetch) -> str | None:
    if not fetch.failure:
        return None
    when = "" if fetch.worked is None else f", last fetched {monotonic() - fetch.worked:.0f} s ago"
    return f"the remote could not be fetched, so this may be out of date{when}: {fetch.failure}"


def _clone(remote: GitRemote, path: Path) -> None:
    """Clone into a folder beside `path`, then move it there: a clone cut short leaves nothing half made.
    Every branch of the remote becomes a branch of the clone, so each can be logged and pushed."""
    from dulwich.refs import Ref

    from .gitrepo import BRANCHES

    credentials = remote.credentials()
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".clone-", dir=path.parent))
    try:
        with _cloned(remote.url, staging, credentials) as repo:
            for ref, sha in repo.refs.as_dict(Ref(b"refs/remotes/origin/")).items():
                if ref != b"HEAD":
                    repo.refs.set_if_equals(Ref(BRANCHES + ref), None, sha)
        staging.rename(path)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _cloned(url: str, target: Path, credentials: Credentials | None) -> Repo:
    from dulwich import porcelain
    from dulwich.client import default_urllib3_manager

    from .gitpush import PUSH_TIMEOUT_SECONDS

    manager = default_urllib3_manager(None, timeout=PUSH_TIMEOUT_SECONDS)
    auth: dict[str, Any] = {"pool_manager": manager}
    if credentials is not None:
        auth.update(username=credentials.username, password=credentials.password)
    try:
        return porcelain.clone(url, str(target), errstream=io.BytesIO(), **auth)
    except Exception as error:  # dulwich's and urllib3's: the remote cannot be reached, or refuses
        reason = redacted(str(error), target)[:300] or type(error).__name__
        raise ToolError(
            "BEM-350", f"fatal: could not clone '{url}': {type(error).__name__}: {reason}"
        ) from None

"""Pushing one branch with dulwich, told as git tells it: a push the remote refuses is `PushRejected` with
the lines git would print (`remote: ...`, ` ! [remote rejected] ...`, `error: failed to push some refs to
'...'`). A remote on this machine is pushed to through dulwich's own receive-pack, which runs the
repository's hooks as git's does (dulwich's local client writes the refs itself and runs none)."""

from __future__ import annotations

import re
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Any

from dulwich.client import (
    GitClient,
    HTTPUnauthorized,
    TraditionalGitClient,
    default_urllib3_manager,
    get_transport_and_path,
)
from dulwich.errors import GitProtocolError, NotGitRepository
from dulwich.graph import can_fast_forward
from dulwich.objects import ObjectID
from dulwich.protocol import Protocol, ReceivableProtocol
from dulwich.refs import Ref
from dulwich.repo import Repo
from dulwich.server import DictBackend, ReceivePackHandler

from .gitrepo import BRANCHES
from .worktree import Credentials

PUSH_TIMEOUT_SECONDS = 120
# dulwich's words for a refusing pre-receive hook, before the hook's own
_HOOK_FAILED = re.compile(r"^pre-receive hook exited with status \d+: ", re.DOTALL)


class PushRejected(Exception):
    """The remote did not take the push; `lines` are what git would print about it."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines


class NoSuchBranch(PushRejected):
    """The branch to push is not in the repository: nothing was sent to the remote."""


@dataclass(frozen=True)
class Pushed:
    commit: str
    summary: str


class _ReceivePackNearby(TraditionalGitClient):
    """A client whose server is dulwich's receive-pack in a thread of this process, over a socket pair."""

    def __init__(self, timeout: float) -> None:
        super().__init__()
        self._timeout = timeout

    def _connect(
        self, cmd: bytes, path: str | bytes, protocol_version: int | None = None
    ) -> tuple[Protocol, Callable[[], bool], IO[bytes] | None]:
        if cmd != b"receive-pack":
            raise GitProtocolError(f"{cmd.decode()} is not served here")
        repo = Repo(path.decode() if isinstance(path, bytes) else path)  # NotGitRepository: no such remote
        ours, theirs = socket.socketpair()
        ours.settimeout(self._timeout)
        theirs.settimeout(self._timeout)
        server = threading.Thread(target=_receive, args=(repo, theirs), daemon=True)
        server.start()
        reader = ours.makefile("rb")

        def close() -> None:
            reader.close()
            ours.close()
            server.join(self._timeout)

        return Protocol(reader.read, ours.sendall, close), lambda: False, None


def _receive(repo: Repo, sock: socket.socket) -> None:
    with repo, sock:
        try:
            proto = ReceivableProtocol(sock.recv, sock.sendall)
            backend = DictBackend({b"/": repo})  # type: ignore[arg-type]  # a Repo is a BackendRepo
            ReceivePackHandler(backend, ["/"], proto).handle()
            # a refused push is answered before its pack is read: take the rest, so that the client can
            # send it whole and then read the answer, as from a server that reads on
            while sock.recv(65536):
                pass
        except (OSError, GitProtocolError):  # the client went away: nothing to tell it
            pass


def remote_client(location: str, credentials: Credentials | None, timeout: float) -> tuple[GitClient, str]:
    """A client for `location` and the path to ask it for: a URL's over HTTP with `credentials`, a path's
    through dulwich's receive-pack in this process."""
    if "://" not in location:
        return _ReceivePackNearby(timeout), location
    manager = default_urllib3_manager(None, timeout=timeout)
    user = credentials.username if credentials else None
    password = credentials.password if credentials else None
    return get_transport_and_path(
        location,
        username=user,
        password=password,
        pool_manager=manager,  # type: ignore[arg-type]
    )


def _lines(data: bytes) -> list[str]:
    return [line.strip() for line in re.split(r"[\r\n]+", data.decode("utf-8", "replace")) if line.strip()]


def push_branch(
    repo: Repo,
    location: str,
    branch: str,
    *,
    credentials: Credentials | None = None,
    timeout: float = PUSH_TIMEOUT_SECONDS,
) -> Pushed:
    """Push `branch` of `repo` to the same branch at `location` (a path or a URL), fast-forward only."""
    ref = Ref(BRANCHES + branch.encode("utf-8"))
    failed = f"error: failed to push some refs to '{location}'"
    local = repo.refs.as_dict().get(ref)
    if local is None:
        raise NoSuchBranch([f"error: src refspec {branch} does not match any", failed])
    said: list[str] = []
    before: dict[bytes, bytes] = {}

    def update_refs(refs: dict[Any, Any]) -> dict[Any, Any]:
        before.update(refs)
        theirs = refs.get(ref)
        if theirs not in (None, local) and not _fast_forward(repo, theirs, local):
            raise PushRejected([f" ! [rejected]        {branch} -> {branch} (non-fast-forward)", failed])
        return {ref: local}

    def progress(data: bytes) -> None:
        said.extend(f"remote: {line}" for line in _lines(data))

    client, path = remote_client(location, credentials, timeout)
    try:
        result = client.send_pack(path.encode(), update_refs, _pack_data(repo), progress=progress)
    except PushRejected:
        raise
    except GitProtocolError as error:  # a pre-receive hook's refusal, or a remote out of reach
        raise PushRejected([*said, *_protocol_refusal(str(error), branch, location), failed]) from None
    except HTTPUnauthorized:
        raise PushRejected([*said, f"fatal: Authentication failed for '{location}'", failed]) from None
    except NotGitRepository:
        raise PushRejected([f"fatal: '{location}' does not appear to be a git repository", failed]) from None
    except OSError as error:  # the socket's: the remote did not answer in time
        reason = error.strerror or type(error).__name__
        raise PushRejected([*said, f"fatal: unable to access '{location}': {reason}", failed]) from None
    refused = (result.ref_status or {}).get(ref)
    if refused is not None:
        raise PushRejected([*said, f" ! [remote rejected] {branch} -> {branch} ({refused})", failed])
    return Pushed(local.decode(), _summary(location, ref, before.get(ref), local))


def _protocol_refusal(text: str, branch: str, location: str) -> list[str]:
    if _HOOK_FAILED.match(text):
        words = [f"remote: {line}" for line in _lines(_HOOK_FAILED.sub("", text).encode())]
        return [*words, f" ! [remote rejected] {branch} -> {branch} (pre-receive hook declined)"]
    return [f"fatal: unable to access '{location}': {text[:500]}"]


def _pack_data(repo: Repo) -> Callable[..., Any]:
    """The pack's objects, without dulwich's local progress (`counting objects`), which git prints only
    to a terminal."""

    def generate(have: Any, want: Any, *, ofs_delta: bool = False, progress: Any = None) -> Any:
        return repo.generate_pack_data(have, want, ofs_delta=ofs_delta)

    return generate


def _fast_forward(repo: Repo, theirs: bytes, ours: bytes) -> bool:
    theirs_id, ours_id = ObjectID(theirs), ObjectID(ours)
    return theirs_id in repo.object_store and can_fast_forward(repo, theirs_id, ours_id)


def _summary(location: str, ref: bytes, old: bytes | None, new: bytes) -> str:
    """As `git push --porcelain` prints it."""
    name = ref.decode()
    if old is None:
        flag, what = "*", "[new branch]"
    elif old == new:
        flag, what = "=", "[up to date]"
    else:
        flag, what = " ", f"{old.decode()[:7]}..{new.decode()[:7]}"
    return f"To {location}\n{flag}\t{name}:{name}\t{what}\nDone"

"""One `riverbeam dev` per data dir: an exclusive flock on `<data dir>/lock`, held for the life of the
process, with its pid written in the file so a second stack can say whose it is. Two stacks on one data dir
would each keep their own copy of the records and overwrite the other's snapshot: records would be lost.

The kernel releases a flock when its process ends, however it ends (kill -9 included): a lock file left
behind by a dead stack never blocks the next one. The lock is fcntl's own rather than the `filelock`
package's: filelock opens the file with O_TRUNC before it tries the lock, which would erase the holder's pid
each time a second stack is refused."""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path

LOCK_FILE = "lock"
# how long a refused stack waits for the holder's pid to be written (the holder writes it right after it
# takes the lock)
PID_WAIT_SECONDS = 1.0


class DataDirLocked(Exception):
    """The data dir is another stack's, or cannot be locked: one line for the person who started this one."""


def _holder(fd: int) -> str:
    """The pid the holder wrote, as the message names it."""
    deadline = time.monotonic() + PID_WAIT_SECONDS
    while True:
        written = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
        if written.isdigit() or time.monotonic() >= deadline:
            return f"pid {written}" if written.isdigit() else "pid unknown"
        time.sleep(0.05)


@contextlib.contextmanager
def data_dir_lock(data_dir: Path) -> Iterator[None]:
    """Hold `data_dir`'s lock until the block ends (the stack's life); DataDirLocked where another process
    holds it, naming that process's pid."""
    path = data_dir / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    except OSError as error:
        raise DataDirLocked(f"the lock file {path} cannot be opened ({error.strerror or error})") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            raise DataDirLocked(
                f"the data dir {data_dir} is in use by another riverbeam dev ({holder})"
            ) from None
        except OSError as error:
            raise DataDirLocked(
                f"the data dir {data_dir} cannot be locked ({error.strerror or error})"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the lock

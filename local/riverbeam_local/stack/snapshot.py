"""The embedded table's items and the queues' messages, kept in one JSON file under the data dir: written
on stop and every few seconds after a change, read back on start, so a restart keeps the user's sessions.
Written atomically (a temp file, then os.replace), so a crash mid-write leaves the previous snapshot.
The records are the users' conversations and their tools' args: the file is created 0600, readable by its
owner alone, as the stack's secret is.

The content bucket's objects (large content the items point at) are files under `<data dir>/content/`, one
per key: content-addressed, each is written once, before the snapshot whose items point at it."""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

log = logging.getLogger("riverbeam_local")
FORMAT = 1
BATCH = 25  # BatchWriteItem's limit
CONTENT_DIR = "content"
FILE_MODE = 0o600
DIRECTORY_MODE = 0o700


class SnapshotError(Exception):
    """The snapshot file exists but cannot be read back."""


def _backends(service: str) -> Iterator[Any]:
    # moto keeps one backend per account and region; the stack uses one, whichever the credentials chose
    from moto.dynamodb.models import dynamodb_backends
    from moto.sqs.models import sqs_backends

    backends: Any = dynamodb_backends if service == "dynamodb" else sqs_backends
    for regions in list(backends.values()):
        yield from list(regions.values())


def capture(lock: threading.Lock, table_name: str, queue_names: dict[str, str]) -> dict[str, Any]:
    """The table's items (DynamoDB JSON) and the queues' messages, read from moto's backends under the
    embedded server's lock: no request is half done."""
    with lock:
        items = [
            item.to_json()["Attributes"]
            for backend in _backends("dynamodb")
            if table_name in backend.tables
            for item in backend.tables[table_name].all_items()
        ]
        # message attributes are not kept: the stack's producers send none
        messages = {
            role: [
                {"body": m.body, "group_id": m.group_id, "deduplication_id": m.deduplication_id}
                for backend in _backends("sqs")
                if name in backend.queues
                for m in list(backend.queues[name]._messages)
            ]
            for role, name in queue_names.items()
        }
    return {"format": FORMAT, "items": items, "messages": messages}


def _private_draft(path: Path) -> int:
    """A descriptor of `path`'s temp file, made empty and 0600 (a crash may have left one, with any mode)."""
    descriptor = os.open(
        path.with_name(f".{path.name}.tmp"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE
    )
    os.fchmod(descriptor, FILE_MODE)
    return descriptor


def write(path: Path, state: dict[str, Any]) -> None:
    with os.fdopen(_private_draft(path), "w") as out:
        json.dump(state, out)
        out.flush()
        os.fsync(out.fileno())
    os.replace(path.with_name(f".{path.name}.tmp"), path)


def read(path: Path) -> dict[str, Any] | None:
    if not path.exists():
        return None
    try:
        state = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise SnapshotError(f"{path} cannot be read ({error}); move it away to start empty") from None
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        raise SnapshotError(f"{path} is not a snapshot of this version; move it away to start empty")
    return state


def restore(
    state: dict[str, Any], dynamodb: Any, sqs: Any, table_name: str, queue_urls: dict[str, str]
) -> None:
    items: list[dict[str, Any]] = state.get("items", [])
    for start in range(0, len(items), BATCH):
        requests = [{"PutRequest": {"Item": item}} for item in items[start : start + BATCH]]
        pending: dict[str, Any] = {table_name: requests}
        for _ in range(10):  # a real server may hand some back; the embedded one never does
            pending = dynamodb.batch_write_item(RequestItems=pending).get("UnprocessedItems") or {}
            if not pending:
                break
    for role, messages in state.get("messages", {}).items():
        for m in messages if role in queue_urls else []:
            extra = {"MessageGroupId": m["group_id"]} if m.get("group_id") else {}
            if m.get("deduplication_id"):
                extra["MessageDeduplicationId"] = m["deduplication_id"]
            sqs.send_message(QueueUrl=queue_urls[role], MessageBody=m["body"], **extra)
    count = sum(len(m) for m in state.get("messages", {}).values())
    log.info("restored %d items and %d queued messages", len(items), count)


def capture_objects(lock: threading.Lock, bucket: str, kept: set[str]) -> dict[str, bytes]:
    """The bucket's objects not in `kept`, read from moto's backend under the embedded server's lock."""
    from moto.s3.models import s3_backends

    found: dict[str, bytes] = {}
    with lock:
        for partitions in list(s3_backends.values()):
            for backend in list(partitions.values()):
                stored = backend.buckets.get(bucket)
                if stored is None:
                    continue
                for key in list(stored.keys.keys()):
                    if key not in kept and key not in found:
                        found[key] = bytes(stored.keys[key].value)
    return found


def write_objects(directory: Path, objects: dict[str, bytes]) -> None:
    for key, data in objects.items():
        path = directory / key
        path.parent.mkdir(mode=DIRECTORY_MODE, parents=True, exist_ok=True)
        with os.fdopen(_private_draft(path), "wb") as out:
            out.write(data)
        os.replace(path.with_name(f".{path.name}.tmp"), path)


def kept_objects(directory: Path) -> set[str]:
    if not directory.is_dir():
        return set()
    return {
        p.relative_to(directory).as_posix()
        for p in directory.rglob("*")
        if p.is_file() and not p.name.startswith(".")
    }


def restore_objects(directory: Path, s3: Any, bucket: str) -> None:
    """Put back the objects kept under `directory` (those the bucket lacks)."""
    keys = kept_objects(directory)
    for key in sorted(keys):
        s3.put_object(Bucket=bucket, Key=key, Body=(directory / key).read_bytes())
    if keys:
        log.info("restored %d content objects", len(keys))


class Snapshotter:
    """Writes a snapshot every `interval` seconds while something changed, and once more on stop."""

    def __init__(
        self,
        path: Path,
        lock: threading.Lock,
        table_name: str,
        queue_names: dict[str, str],
        *,
        changed: threading.Event,
        interval: float,
    ) -> None:
        self.path = path
        self._lock = lock
        self._table_name = table_name
        self._queue_names = queue_names
        self._interval = interval
        self._changed = changed
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="snapshot", daemon=True)
        self._bucket: str | None = None
        self._objects_dir = path.parent / CONTENT_DIR
        self._kept: set[str] = set()

    def keep_objects(self, bucket: str, directory: Path) -> None:
        """Keep the objects of `bucket` too, as files under `directory`."""
        self._bucket, self._objects_dir = bucket, directory
        self._kept = kept_objects(directory)

    def start(self) -> None:
        self._thread.start()

    def save(self) -> None:
        self._changed.clear()
        state = capture(self._lock, self._table_name, self._queue_names)
        if self._bucket is not None:  # taken after the items, kept before them: all they point at
            objects = capture_objects(self._lock, self._bucket, self._kept)
            write_objects(self._objects_dir, objects)
            self._kept.update(objects)
        write(self.path, state)

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            if self._changed.is_set():
                try:
                    self.save()
                except Exception:  # a full disk must not stop the stack; the next change tries again
                    log.exception("the snapshot %s could not be written", self.path)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        self.save()

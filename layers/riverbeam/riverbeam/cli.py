"""`riverbeam demo`: the whole approval loop in one process, on the embedded DynamoDB or in memory."""

from __future__ import annotations

import argparse
import logging
import os
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from beam_store import BeamStore, DynamoBeamStore, InMemoryStore

from .agents_builtin import author_agent
from .models import AgentResult, FrameHeader
from .pipeline import RiverBeam


def _show(frame: FrameHeader) -> None:
    body = frame.model_dump(mode="json", exclude={"session_id", "interaction_id", "run_id"})
    kind, seq = body.pop("type"), body.pop("frame_seq")
    if kind == "done":
        body = {k: body["result"][k] for k in ("interrupted", "action_required")}
    print(f"    frame {seq:>2} {kind:<12} {body}")


@contextmanager
def _store(kind: str) -> Iterator[BeamStore]:
    if kind == "memory":
        print("store: InMemoryStore")
        yield InMemoryStore()
        return
    import boto3
    from beam_store.embedded import embedded_dynamodb

    with embedded_dynamodb() as url:
        os.environ.setdefault("AWS_ACCESS_KEY_ID", "local")
        os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "local")
        client = boto3.client("dynamodb", endpoint_url=url, region_name="us-east-1")
        print(f"store: DynamoBeamStore on the embedded DynamoDB at {url}")
        yield DynamoBeamStore.connect("riverbeam", client=client)


def _remote_branches(remote: Path) -> list[str]:
    out = subprocess.run(
        ["git", "-C", str(remote), "for-each-ref", "--format=%(refname:short)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return out.split()


def demo(data_dir: Path, store_kind: str) -> int:
    with _store(store_kind) as store:
        beam = RiverBeam(store)
        beam.register_agent("author", author_agent(data_dir))
        remote = data_dir / "remote.git"
        session_id, user = str(uuid.uuid4()), {"user_id": "demo-user"}

        def ask(text: str) -> AgentResult:
            print(f"\n> invoke: {text!r}")
            result = beam.invoke(
                {
                    "agent_name": "author",
                    "session_id": session_id,
                    "content": [{"type": "text", "text": text}],
                    "auth_context": user,
                },
                on_frame=_show,
            )
            assert isinstance(result, AgentResult)
            print(f"  agent: {result.text()!r}; interrupted={result.interrupted}")
            return result

        def answer(result: AgentResult, status: str, **extra: Any) -> None:
            action = result.action_required[0]
            print(f"\n> resume: {status} {action.tool}({action.args})")
            beam.resume(
                {
                    "agent_name": "author",
                    "session_id": session_id,
                    "interaction_id": result.interaction_id,
                    "actions": [
                        {
                            "action_id": action.action_id,
                            "kind": "confirmation",
                            "request_id": str(uuid.uuid4()),
                            "status": status,
                            "payload": {"tool": action.tool, "args": action.args},
                            **extra,
                        }
                    ],
                    "auth_context": user,
                },
                on_frame=_show,
            )
            stored = store.get_action(action.action_id or "")
            assert stored is not None
            print(
                f"  action {stored.action_id}: {stored.status}; outcome: "
                f"{stored.outcome.model_dump(exclude_none=True) if stored.outcome else None}"
            )

        print(f"work tree: {data_dir / 'work'}; remote: {remote} (branches: {_remote_branches(remote)})")
        first = ask("Push docs/update")
        answer(first, "submitted")
        print(f"  remote branches now: {_remote_branches(remote)}")
        second = ask("Push main")
        answer(second, "cancelled", reason="not before the release")
        print(f"  remote branches now: {_remote_branches(remote)}")
        ask("Hello")

        print(f"\nsession {session_id}, its messages in seq order:")
        for m in store.list_messages(session_id):
            parts = ", ".join(p.type for p in m.content)
            print(f"  {m.seq:>2} {m.role:<5} {m.type:<13} [{parts}]")
        return 0 if _remote_branches(remote) == ["docs/update"] else 1


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["dev"]:
        # the local stack parses its own flags; it is developer tooling, outside the Lambda layer
        from riverbeam_local.cli import main as dev

        return dev(argv[1:])
    parser = argparse.ArgumentParser(
        prog="riverbeam", description="Riverbeam: agents that ask before they act"
    )
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser(
        "dev", add_help=False, help="the local stack on 127.0.0.1 (HTTP, WebSocket, management API)"
    )
    run_demo = commands.add_parser(
        "demo", help="the approval loop in one process: ask, approve, push, refuse"
    )
    run_demo.add_argument(
        "--data-dir", type=Path, help="where the work tree and remote go (default: a temp dir)"
    )
    run_demo.add_argument(
        "--store",
        choices=["embedded", "memory"],
        default="embedded",
        help="embedded: DynamoBeamStore on the embedded DynamoDB (default); memory: InMemoryStore",
    )
    args = parser.parse_args(argv)
    logging.getLogger("riverbeam").setLevel(logging.WARNING)  # the demo prints its own account of each step
    try:
        if args.data_dir is not None:
            problem = data_dir_problem(args.data_dir)
            if problem is not None:
                return _fail(problem, 2)
            return demo(args.data_dir, args.store)
        with tempfile.TemporaryDirectory(prefix="riverbeam-demo-") as tmp:
            return demo(Path(tmp), args.store)
    except KeyboardInterrupt:
        return _fail("interrupted", 130)
    except OSError as error:  # a disk that filled up, a data dir removed under it: said in one line
        return _fail(f"{error.strerror or error}: {error.filename or ''}".rstrip(": "), 1)


def data_dir_problem(path: Path) -> str | None:
    """Why `path` cannot hold the demo's files (it is a file, or cannot be made or written), or None."""
    if path.exists() and not path.is_dir():
        return f"the data dir {path} is not a directory"
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as error:
        return f"the data dir {path} cannot be used: {error.strerror or error}"
    return None


def _fail(message: str, code: int) -> int:
    print(f"riverbeam demo: {message}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())

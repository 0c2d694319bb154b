"""Run in a bare interpreter (`python -S`) with only what Lambda puts on the path (the functions' folders, the
built layer's python/, the runtime's boto3) and no `git` on PATH; last, the local tooling's folder, for what
stands in for Lambda's runtime (riverbeam_local.lambda_like). Plays, through the handlers, the built-in author
on the offline model with RIVERBEAM_GIT_REMOTE set: a first call clones the remote, a commit is made in the
clone (as a tool of your own would), `Push docs/update` asks, the resume approves and the worker pushes with
the secret's credentials. Prints what happened as JSON. Not a test module: test_lambda_git_push.py runs it."""

from __future__ import annotations

import io
import json
import os
import shutil
import sys
import uuid
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

ROOT = Path(os.environ["RIVERBEAM_ROOT"])
sys.path.append(str(ROOT / "local"))  # last: the layer's packages are found first
from riverbeam_local.lambda_like import LambdaContext, load_handler, sqs_record  # noqa: E402

QUEUE_ARN = "arn:aws:sqs:us-east-1:123456789012:probe.fifo"


def handler(name: str) -> Any:
    return load_handler(Path(os.environ["FUNCTIONS"]) / name / "app.py", f"app_{name}")


def http(name: str, body: dict[str, Any]) -> dict[str, Any]:
    event = json.loads((ROOT / "events" / name / "http.json").read_text())
    event["body"] = json.dumps(body)
    answer: dict[str, Any] = handler(name)(event, LambdaContext(f"riverbeam-{name}", 60))
    return answer


def invoke(session_id: str, text: str) -> dict[str, Any]:
    body = {
        "agent_name": "author",
        "session_id": session_id,
        "content": [{"type": "text", "text": text}],
        "auth_context": {"user_id": "u1"},
    }
    answer = http("invoke", body)
    assert answer["statusCode"] == 200, answer
    result: dict[str, Any] = json.loads(answer["body"])
    return result


def commit_in_clone(clone: Path) -> str:
    """A commit on docs/update in the clone, as an agent's own tool would make it (dulwich, no git)."""
    from dulwich import porcelain

    porcelain.checkout(str(clone), "docs/update")
    (clone / "notes.md").write_text("Written in the function.\n")
    porcelain.add(str(clone), [str(clone / "notes.md")])
    who = b"Riverbeam <riverbeam@localhost>"
    return porcelain.commit(str(clone), "Add notes", author=who, committer=who).decode()


def main() -> None:
    import boto3
    from beam_store import DynamoBeamStore

    assert shutil.which("git") is None, "git is on PATH"
    definition = json.loads(os.environ["TABLE_DEFINITION"])
    boto3.client("dynamodb").create_table(TableName=os.environ["TABLE_NAME"], **definition)
    sqs = boto3.client("sqs")
    os.environ["QUEUE_URL"] = sqs.create_queue(QueueName="probe.fifo", Attributes={"FifoQueue": "true"})[
        "QueueUrl"
    ]
    session_id = str(uuid.uuid4())
    logs = io.StringIO()
    with redirect_stdout(logs):
        listed = invoke(session_id, "call list_files {}")  # the first git tool: the clone is made
        clone = Path(os.environ["RIVERBEAM_DATA_DIR"]) / "clone"
        made = commit_in_clone(clone)
        asked = invoke(session_id, "Push docs/update")
        action = asked["action_required"][0]
        resumed = http(
            "resume",
            {
                "agent_name": "author",
                "session_id": session_id,
                "interaction_id": asked["interaction_id"],
                "actions": [
                    {"action_id": action["action_id"], "kind": "confirmation", "status": "submitted"}
                ],
                "auth_context": {"user_id": "u1"},
            },
        )
        got = sqs.receive_message(QueueUrl=os.environ["QUEUE_URL"], AttributeNames=["All"])["Messages"]
        worked = handler("worker")(
            {"Records": [sqs_record(m, QUEUE_ARN) for m in got]}, LambdaContext("w", 900)
        )
    stored = DynamoBeamStore(boto3.client("dynamodb"), os.environ["TABLE_NAME"]).get_action(
        action["action_id"]
    )
    assert stored is not None and stored.outcome is not None
    import dulwich

    print(
        json.dumps(
            {
                "listed": listed["content"],
                "asked": [action["tool"], action["args"]],
                "resumed": resumed["statusCode"],
                "worker": worked,
                "status": stored.status,
                "outcome": stored.outcome.model_dump(mode="json"),
                "made": made,
                "git_config": (clone / ".git" / "config").read_text(),
                "dulwich": dulwich.__file__,
                "path": sys.path,
            }
        )
    )


if __name__ == "__main__":
    main()

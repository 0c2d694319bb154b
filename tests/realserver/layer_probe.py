"""Run in a bare interpreter (`python -S`) with only what Lambda puts on the path: the function's folder,
the built layer's python/ and the runtime's boto3. Plays one streamed invoke through the handlers against
the server at AWS_ENDPOINT_URL and prints what happened as JSON. Not a test module: test_layer.py runs it."""

from __future__ import annotations

import importlib.util
import io
import json
import os
import sys
import uuid
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

ROOT = Path(os.environ["RIVERBEAM_ROOT"])


class Context:
    function_name = "riverbeam-probe"
    function_version = "$LATEST"
    memory_limit_in_mb = 512
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:riverbeam-probe"
    aws_request_id = str(uuid.uuid4())

    def get_remaining_time_in_millis(self) -> int:
        return 60_000


def handler(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(f"app_{name}", ROOT / "functions" / name / "app.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.lambda_handler


def sample(name: str) -> dict[str, Any]:
    return json.loads((ROOT / "events" / f"{name}.json").read_text())  # type: ignore[no-any-return]


def main() -> None:
    import boto3
    from riverbeam.aws.worker import lambda_record

    definition = json.loads(os.environ["TABLE_DEFINITION"])
    boto3.client("dynamodb").create_table(TableName=os.environ["TABLE_NAME"], **definition)
    sqs = boto3.client("sqs")
    queue = sqs.create_queue(QueueName="probe.fifo", Attributes={"FifoQueue": "true"})["QueueUrl"]
    os.environ["QUEUE_URL"] = queue
    session_id, connection_id = str(uuid.uuid4()), "probe-connection="

    connect = sample("connections/connect")
    connect["queryStringParameters"] = {"session_id": session_id, "user_id": "u1"}
    connect["requestContext"]["connectionId"] = connection_id
    invoke = sample("invoke/http_stream")
    body = json.loads(invoke["body"])
    invoke["body"] = json.dumps({**body, "session_id": session_id})
    logs = io.StringIO()
    with redirect_stdout(logs):
        connected = handler("connections")(connect, Context())
        accepted = handler("invoke")(invoke, Context())
        got = sqs.receive_message(QueueUrl=queue, AttributeNames=["All"])["Messages"]
        queue_arn = "arn:aws:sqs:us-east-1:123456789012:probe.fifo"
        records = [lambda_record(m, queue_arn) for m in got]
        worked = handler("worker")({"Records": records}, Context())
        run_id = json.loads(accepted["body"])["run_id"]
        frames = sample("records/frames")
        frames["rawPath"] = frames["requestContext"]["http"]["path"] = f"/v1/runs/{run_id}/frames"
        read = handler("records")(frames, Context())
    metrics = [json.loads(line) for line in logs.getvalue().splitlines() if line.startswith('{"_aws"')]
    import beam_store
    import pydantic
    import riverbeam

    print(
        json.dumps(
            {
                "connected": connected["statusCode"],
                "accepted": accepted["statusCode"],
                "worker": worked,
                "frames": json.loads(read["body"])["frames"],
                "pushed": sum(sum(m.get("FramesPushed", [])) for m in metrics),
                "gone": sum(sum(m.get("ConnectionsGone", [])) for m in metrics),
                "modules": {m.__name__: m.__file__ for m in (riverbeam, beam_store, pydantic, boto3)},
                "path": sys.path,
            }
        )
    )


if __name__ == "__main__":
    main()

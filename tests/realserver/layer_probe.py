"""Run in a bare interpreter (`python -S`) with only what Lambda puts on the path: the function's folder,
the built layer's python/ and the runtime's boto3; last, the local tooling's folder, for what stands in for
Lambda's runtime (riverbeam_local.lambda_like: the context, the handler loaded by its file, the SQS
records; standard library only). Plays one streamed invoke through the handlers against the server at
AWS_ENDPOINT_URL and prints what happened as JSON. Not a test module: test_layer.py runs it."""

from __future__ import annotations

import io
import json
import os
import sys
import uuid
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

ROOT = Path(os.environ["RIVERBEAM_ROOT"])


# last on the path: the layer's packages are found before anything of the repository's
sys.path.append(str(ROOT / "local"))
from riverbeam_local.lambda_like import LambdaContext, load_handler, sqs_record  # noqa: E402


def context() -> LambdaContext:
    return LambdaContext("riverbeam-probe", 60)


def handler(name: str) -> Any:
    return load_handler(ROOT / "functions" / name / "app.py", f"app_{name}")


def sample(name: str) -> dict[str, Any]:
    return json.loads((ROOT / "events" / f"{name}.json").read_text())  # type: ignore[no-any-return]


def main() -> None:
    import boto3

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
        connected = handler("connections")(connect, context())
        accepted = handler("invoke")(invoke, context())
        got = sqs.receive_message(QueueUrl=queue, AttributeNames=["All"])["Messages"]
        queue_arn = "arn:aws:sqs:us-east-1:123456789012:probe.fifo"
        records = [sqs_record(m, queue_arn) for m in got]
        worked = handler("worker")({"Records": records}, context())
        run_id = json.loads(accepted["body"])["run_id"]
        frames = sample("records/frames")
        frames["rawPath"] = frames["requestContext"]["http"]["path"] = f"/v1/runs/{run_id}/frames"
        read = handler("records")(frames, context())
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

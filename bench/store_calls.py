"""DynamoDB requests and capacity of a non-streamed invoke that interrupts and of the resume approving it.

In process (RiverBeam.invoke, RiverBeam.resume), then as deployed: the API handler's part (accept_invoke,
accept_resume) and the worker's (run_job) apart.

    python bench/store_calls.py                 # on moto in process
    python bench/store_calls.py --endpoint URL  # on any DynamoDB-compatible endpoint
    python bench/store_calls.py --endpoint aws  # on the AWS account of the environment
    python bench/store_calls.py --request-ids   # every request with a request_id, each sent twice

With a content bucket (on moto, always; elsewhere with --content-bucket) the S3 requests are counted too:
none for these steps, whose content is small, and a round whose tool output and reply are 600 KB each shows
what large content costs.

Requests are counted with botocore's event hooks; every request asks for ReturnConsumedCapacity=TOTAL and the
units the server reports are summed. moto reports fixed placeholder units (and none for transactions), so the
units are also estimated from the items' sizes with DynamoDB's on-demand rules: a strongly consistent read is
1 RCU per 4 KB read, a write 1 WCU per 1 KB written, doubled inside a transaction.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import uuid
from collections import Counter
from contextlib import ExitStack
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import boto3
from beam_store import DynamoBeamStore
from riverbeam import AgentResult, ModelTurn, RiverBeam, ScriptedModel, ToolAgentRunner, ToolCall, tool

# --request-ids: every invoke and resume carries a request_id and is sent twice
REQUEST_IDS = False
CAPACITY_OPERATIONS = {
    "GetItem",
    "Query",
    "PutItem",
    "UpdateItem",
    "TransactWriteItems",
    "DeleteItem",
    "BatchGetItem",
    "BatchWriteItem",
}


def attribute_size(value: dict[str, Any]) -> int:
    """Bytes of one attribute value by DynamoDB's item-size rules (close, not exact, for numbers)."""
    ((kind, inner),) = value.items()
    if kind == "S":
        return len(inner.encode())
    if kind == "N":
        return len(inner.lstrip("-").replace(".", "")) // 2 + 2
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "B":
        return len(inner)
    if kind == "M":
        return 3 + sum(len(k.encode()) + attribute_size(v) + 1 for k, v in inner.items())
    if kind == "L":
        return 3 + sum(attribute_size(v) + 1 for v in inner)
    return sum(len(str(v)) for v in inner)


def item_size(item: dict[str, Any]) -> int:
    return sum(len(name.encode()) + attribute_size(value) for name, value in item.items())


class Meter:
    def __init__(self) -> None:
        self.requests: Counter[str] = Counter()
        self.reported = 0.0
        self.estimated_rcu = 0.0
        self.estimated_wcu = 0.0

    def attach(self, client: Any) -> None:
        client.meta.events.register("provide-client-params.dynamodb", self._ask_for_capacity)
        client.meta.events.register("after-call.dynamodb", self._record)

    def take(self) -> tuple[int, dict[str, int], float, float, float]:
        """The figures since the last take, then start counting afresh."""
        figures = (
            sum(self.requests.values()),
            dict(self.requests),
            self.reported,
            self.estimated_rcu,
            self.estimated_wcu,
        )
        self.requests, self.reported, self.estimated_rcu, self.estimated_wcu = Counter(), 0.0, 0.0, 0.0
        return figures

    def _ask_for_capacity(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        if model.name in CAPACITY_OPERATIONS:
            params.setdefault("ReturnConsumedCapacity", "TOTAL")

    def _record(self, http_response: Any, parsed: dict[str, Any], model: Any, **kwargs: Any) -> None:
        name = model.name
        if name not in CAPACITY_OPERATIONS:
            return
        self.requests[name] += 1
        consumed = parsed.get("ConsumedCapacity")
        for entry in consumed if isinstance(consumed, list) else [consumed] if consumed else []:
            self.reported += float(entry.get("CapacityUnits", 0))
        params = kwargs.get("context", {}).get("riverbeam_params") or {}
        if name == "GetItem":
            self.estimated_rcu += max(1, math.ceil(item_size(parsed.get("Item", {})) / 4096))
        elif name == "Query":
            total = sum(item_size(i) for i in parsed.get("Items", []))
            self.estimated_rcu += max(1, math.ceil(total / 4096)) * (
                1 if params.get("ConsistentRead") else 0.5
            )
        elif name == "BatchWriteItem":
            for requests in params.get("RequestItems", {}).values():
                for request in requests:
                    self.estimated_wcu += max(1, math.ceil(item_size(request["PutRequest"]["Item"]) / 1024))
        elif name == "TransactWriteItems":
            for entry in params.get("TransactItems", []):
                ((_, op),) = entry.items()
                written = op.get("Item") or {**op.get("Key", {}), **op.get("ExpressionAttributeValues", {})}
                self.estimated_wcu += 2 * max(1, math.ceil(item_size(written) / 1024))

    def keep_params(self, params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        context["riverbeam_params"] = dict(params)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--endpoint", help="a DynamoDB endpoint URL, or 'aws' for the account's default")
    parser.add_argument(
        "--content-bucket", help="an existing S3 bucket for large content (moto: one is made)"
    )
    parser.add_argument("--rounds", type=int, default=5, help="invoke+resume pairs to average over")
    parser.add_argument(
        "--request-ids",
        action="store_true",
        help="give every invoke and resume a request_id and send each twice (the retry counted apart)",
    )
    args = parser.parse_args()
    global REQUEST_IDS
    REQUEST_IDS = args.request_ids
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    with ExitStack() as stack:
        if args.endpoint is None:
            os.environ.update(AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench")
            from moto import mock_aws

            stack.enter_context(mock_aws())
        endpoint = None if args.endpoint in (None, "aws") else args.endpoint
        client = boto3.client("dynamodb", endpoint_url=endpoint)
        s3, bucket = boto3.client("s3"), args.content_bucket
        if args.endpoint is None:
            bucket = f"riverbeam-bench-{uuid.uuid4().hex[:8]}"
            s3.create_bucket(Bucket=bucket)
        s3_requests: Counter[str] = Counter()
        s3.meta.events.register("after-call.s3", lambda model, **_: s3_requests.update([model.name]))
        store = DynamoBeamStore.connect(
            f"riverbeam-bench-{uuid.uuid4().hex[:8]}", client=client, content_bucket=bucket, s3_client=s3
        )
        meter = Meter()
        meter.attach(client)
        client.meta.events.register("before-parameter-build.dynamodb", meter.keep_params)

        @tool(confirm_required=True)
        def git_push(ref: str) -> dict[str, str]:
            """Push a branch (counted, not run)."""
            return {"ref": ref}

        script = [
            ModelTurn(text="I will push it.", tool_calls=[ToolCall(name="git_push", args={"ref": "docs/x"})]),
            ModelTurn(text="Pushed."),
        ]
        beam = RiverBeam(store)
        beam.register_agent(
            "author", ToolAgentRunner(model=ScriptedModel(script * 2 * args.rounds), tools=[git_push])
        )
        session_id = str(uuid.uuid4())
        rows, split = (
            in_process(beam, meter, session_id, args.rounds),
            deployed(beam, meter, session_id, args.rounds),
        )
        small_s3 = dict(s3_requests)
        large = large_round(beam, meter, s3_requests) if bucket else None
        store.client.delete_table(TableName=store.table_name)

    where = "moto (in process)" if args.endpoint is None else args.endpoint
    print(f"store: DynamoBeamStore on {where}; {args.rounds} rounds in one session (history grows)")
    print(
        f"{'step':<28}{'requests':>9}  {'by operation':<62}"
        f"{'reported CU':>12}{'est. RCU':>10}{'est. WCU':>10}"
    )
    again = ("invoke sent again", "resume sent again") if REQUEST_IDS else ()
    print(
        "in process (RiverBeam.invoke, RiverBeam.resume)"
        + (", each with a request_id" if REQUEST_IDS else "")
    )
    print_rows(rows, ("invoke (interrupts)", "resume (approves)", *again))
    print("deployed: the API handler's part (accept_*), then the worker's (run_job)")
    print_rows(
        split,
        ("invoke: API handler", "invoke: worker", "resume: API handler", "resume: worker", *again),
    )
    print("aim: at most 3 requests per invoke and 4 per resume in process; the API handler reads the session")
    print("item and the actions it resolves, never the history. A streamed run (every resume) keeps its")
    print("frames in its closing write, and in a TransactWriteItems (while it runs) after every 25")
    print("frames or second and before")
    print("a tool runs; a resume's run_started frame goes in its opening write, so its approved tool (run")
    print("right after it) needs no write of its own, and a worker dying in it has stored every frame sent.")
    print("Each approval event (Requested in the run's closing write, Decided in the resume's opening write)")
    print("is an outbox item in that same transaction: no request of its own, its item's write units only")
    if large is None:
        print("S3: no content bucket (--content-bucket): content over 256 KiB would fail its run")
        return
    print(f"S3 requests of all the steps above (content under 256 KiB): {sum(small_s3.values())} {small_s3}")
    print("a round whose tool output and reply are 600 KB each (the resume's run stores and streams them)")
    print_rows([large[0]], ("invoke (interrupts)", "resume (600 KB)"))
    print(f"S3 requests of that round: invoke {large[1][0]}, resume {large[1][1]}")


def large_round(
    beam: RiverBeam, meter: Meter, s3_requests: Counter[str]
) -> tuple[Any, tuple[dict[str, int], dict[str, int]]]:
    """One invoke and resume of an agent whose tool prints 600 KB and whose reply is 600 KB."""
    line = "".join(chr(0x61 + (i * 7) % 26) for i in range(99)) + "\n"
    output, reply = line * 6144, (line * 6144).upper()

    @tool(confirm_required=True)
    def dump(name: str) -> dict[str, str]:
        """Dump a file (600 KB)."""
        return {"name": name, "text": output}

    script = [
        ModelTurn(text="I will dump it.", tool_calls=[ToolCall(name="dump", args={"name": "log"})]),
        ModelTurn(text=reply),
    ]
    beam.register_agent("big", ToolAgentRunner(model=ScriptedModel(script), tools=[dump]))
    meter.take()
    s3_requests.clear()
    session_id = str(uuid.uuid4())
    result = beam.invoke(invoke_request(session_id) | {"agent_name": "big"})
    assert isinstance(result, AgentResult)
    invoked, invoke_s3 = meter.take(), dict(s3_requests)
    s3_requests.clear()
    beam.resume(resume_request(session_id, result) | {"agent_name": "big"})
    return (invoked, meter.take()), (invoke_s3, dict(s3_requests))


def in_process(beam: RiverBeam, meter: Meter, session_id: str, rounds: int) -> list[Any]:
    rows = []
    for _ in range(rounds):
        meter.take()  # count from here
        invoke = invoke_request(session_id)
        result = beam.invoke(invoke)
        assert isinstance(result, AgentResult) and result.interrupted
        invoked = meter.take()
        resume = resume_request(session_id, result)
        beam.resume(resume)
        resumed = meter.take()
        if not REQUEST_IDS:
            rows.append((invoked, resumed))
            continue
        assert beam.invoke(invoke).model_dump() == result.model_dump()
        invoked_again = meter.take()
        beam.resume(resume)
        rows.append((invoked, resumed, invoked_again, meter.take()))
    return rows


def deployed(beam: RiverBeam, meter: Meter, session_id: str, rounds: int) -> list[Any]:
    split = []
    for _ in range(rounds):
        meter.take()
        invoke = invoke_request(session_id)
        job = beam.accept_invoke(invoke)
        accepted = meter.take()
        result = beam.run_job(job, worker_id="bench")
        assert isinstance(result, AgentResult) and result.interrupted
        ran = meter.take()
        resume = resume_request(session_id, result)
        job = beam.accept_resume(resume)
        resume_accepted = meter.take()
        beam.run_job(job, worker_id="bench")
        resume_ran = meter.take()
        if not REQUEST_IDS:
            split.append((accepted, ran, resume_accepted, resume_ran))
            continue
        assert beam.accept_invoke(invoke).run_id == result.run_id
        invoked_again = meter.take()
        beam.accept_resume(resume)
        split.append((accepted, ran, resume_accepted, resume_ran, invoked_again, meter.take()))
    return split


def print_rows(rows: list[Any], labels: tuple[str, ...]) -> None:
    for index, label in enumerate(labels):
        for n, row in enumerate(rows, start=1):
            total, by_op, reported, rcu, wcu = row[index]
            ops = ", ".join(f"{k} {v}" for k, v in sorted(by_op.items()))
            print(f"{label + f' #{n}':<28}{total:>9}  {ops:<62}{reported:>12.1f}{rcu:>10.1f}{wcu:>10.1f}")


def invoke_request(session_id: str) -> dict[str, Any]:
    return {
        "agent_name": "author",
        "session_id": session_id,
        "content": [{"type": "text", "text": "Push docs/x"}],
        "auth_context": {"user_id": "bench"},
        **({"request_id": str(uuid.uuid4())} if REQUEST_IDS else {}),
    }


def resume_request(session_id: str, result: AgentResult) -> dict[str, Any]:
    return {
        "agent_name": "author",
        "session_id": session_id,
        "interaction_id": result.interaction_id,
        "actions": [
            {
                "action_id": result.action_required[0].action_id,
                "status": "submitted",
                **({"request_id": str(uuid.uuid4())} if REQUEST_IDS else {}),
            }
        ],
        "auth_context": {"user_id": "bench"},
    }


if __name__ == "__main__":
    main()

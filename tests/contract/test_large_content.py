"""Content too large for one DynamoDB item (a 600 KB tool output, a 600 KB model reply, a frame carrying
them) is stored and read back whole on every store; DynamoBeamStore keeps it in S3 with no item over
400 KB, and without a content bucket refuses it before anything is written."""

from __future__ import annotations

import json
import time
from typing import Any

import boto3
import pytest
from beam_store import (
    BeamStore,
    ContentTooLarge,
    DynamoBeamStore,
    MessageDraft,
    StepWrite,
    TextPart,
    ToolOutcome,
    ToolResultPart,
    new_id,
    utc_now,
)
from moto import mock_aws

from tests.support import steps
from tests.support.contract import interrupted_interaction, resolve_step, sid
from tests.support.stores import dynamodb_client, snapshot

LARGE = 600 * 1024
DYNAMODB_ITEM_LIMIT = 400 * 1024


def large_text(seed: str, size: int = LARGE) -> str:
    """`size` characters, not one repeated: a store that kept a prefix or a pattern would show it."""
    line = f"{seed} " + "".join(chr(0x61 + (i * 7) % 26) for i in range(93)) + "é\n"
    return (line * (size // len(line) + 1))[:size]


def stored_size(item: dict[str, Any]) -> int:
    """An item's size measured apart from the store's code: each name plus its value's JSON (an upper
    bound of DynamoDB's count)."""
    return sum(len(name.encode()) + len(json.dumps(value).encode()) for name, value in item.items())


def scanned(store: DynamoBeamStore) -> list[dict[str, Any]]:
    items, start = [], None
    while True:
        page = store.client.scan(
            TableName=store.table_name, **({"ExclusiveStartKey": start} if start else {})
        )
        items.extend(page["Items"])
        start = page.get("LastEvaluatedKey")
        if not start:
            return items


def _outcome_step(store: BeamStore, output: str, reply: str) -> tuple[Any, ...]:
    """An action approved and run: its tool's `output` on the action and in a tool message, the agent's
    `reply` after it, and a frame with the output, all in the run's closing write."""
    s, i, action = interrupted_interaction(store)
    opening, r = resolve_step(store, s, i, action)
    store.commit(opening)
    session = store.get_session(s.session_id)
    assert session is not None
    resolved = store.get_action(action.action_id)
    assert resolved is not None
    outcome = ToolOutcome(status="ok", output={"text": output})
    now = utc_now()
    frame = {"type": "tool_result", "run_id": r.run_id, "frame_seq": 1, "name": "git_push", "output": output}
    closing = StepWrite(
        session=session,
        session_op="update",
        interaction=i.model_copy(update={"status": "completed"}),
        interaction_op="release",
        run=r.model_copy(update={"status": "completed", "updated_at": now, "ended_at": now}),
        run_op="close",
        messages=[
            MessageDraft(
                message_id=new_id(),
                interaction_id=i.interaction_id,
                run_id=r.run_id,
                role="tool",
                content=[
                    ToolResultPart(
                        tool_call_id=action.action_id, name="git_push", status="ok", output={"text": output}
                    )
                ],
                created_at=now,
            ),
            MessageDraft(
                message_id=new_id(),
                interaction_id=i.interaction_id,
                run_id=r.run_id,
                role="ai",
                content=[TextPart(text=reply)],
                created_at=now,
            ),
        ],
        record_outcomes=[resolved.model_copy(update={"outcome": outcome})],
        touch_last_active=True,
        frames=[frame],
        frames_expire_at=int(time.time()) + 3600,
    )
    store.commit(closing)
    return s, action, r, frame


def test_a_600_kb_tool_output_and_reply_read_back_whole(store: BeamStore) -> None:
    output, reply = large_text("output"), large_text("reply")
    s, action, r, frame = _outcome_step(store, output, reply)

    _, messages = store.get_session_with_messages(s.session_id)
    tool_part, reply_part = messages[-2].content[0], messages[-1].content[0]
    assert isinstance(tool_part, ToolResultPart) and tool_part.output == {"text": output}
    assert isinstance(reply_part, TextPart) and reply_part.text == reply
    assert store.list_messages(s.session_id, after_seq=messages[-3].seq) == messages[-2:]
    assert store.get_session_with_messages(s.session_id, last=2)[1] == messages[-2:]
    stored = store.get_action(action.action_id)
    assert stored is not None and stored.outcome is not None
    assert stored.outcome.output == {"text": output}
    assert [a.outcome for a in store.list_actions(action.interaction_id)] == [stored.outcome]
    assert store.list_session_actions(s.session_id) == [stored]
    assert store.list_frames(r.run_id)[-1] == frame

    if isinstance(store, DynamoBeamStore):
        sizes = {f"{i['pk']['S']} {i['sk']['S']}": stored_size(i) for i in scanned(store)}
        assert max(sizes.values()) < DYNAMODB_ITEM_LIMIT, sizes
        assert store.content.bucket is not None
        objects = store.content.client.list_objects_v2(Bucket=store.content.bucket)["Contents"]
        # the tool message, the reply, the action's outcome and the frame: one object each
        assert sorted(o["Key"].split("/")[0] for o in objects) == [
            "actions",
            "frames",
            "messages",
            "messages",
        ]


def test_a_large_frame_and_kept_answer_read_back_whole(store: BeamStore) -> None:
    run_id, later = sid(), int(time.time()) + 3600
    big = {"type": "done", "run_id": run_id, "frame_seq": 0, "result": {"content": [large_text("done")]}}
    store.append_frames(run_id, [big], later)
    assert store.add_frame(run_id, {**big, "frame_seq": 1, "type": "text_delta"}, later)
    assert [f["type"] for f in store.list_frames(run_id)] == ["done", "text_delta"]
    assert store.list_frames(run_id)[0] == big

    from beam_store import RequestRecord

    now = int(time.time())
    record = RequestRecord(
        user_id="u1",
        request_id=sid(),
        request_sha256="0" * 64,
        status="in_progress",
        claim_id="c1",
        created_at=utc_now(),
        lease_expires_at=now + 60,
        expires_at=now + 86400,
    )
    assert store.claim_request(record, now) is None
    answer = {"result": {"content": [{"type": "text", "text": large_text("answer")}]}}
    assert store.keep_answer("u1", record.request_id, "c1", answer)
    kept = store.get_request("u1", record.request_id, now)
    assert kept is not None and kept.answer == answer
    held = store.claim_request(record.model_copy(update={"claim_id": "c2"}), now)  # the refused claim
    assert held is not None and held.answer == answer


def test_an_action_whose_args_and_outcome_together_pass_the_item_limit_stays_under_it(
    store: BeamStore,
) -> None:
    """Each part alone is under 256 KiB, inline; together they would not fit one item."""
    s = steps.session(sid())
    i = steps.interaction(s.session_id)
    step, r = steps.begin(s, i)
    store.commit(step)
    args = {"body": large_text("args", 200 * 1024)}
    action = steps.pending_action(i, r, args=args)
    store.commit(steps.close(s, i, r, interrupted_with=[action]))
    output = large_text("outcome", 250 * 1024)
    opening, r2 = resolve_step(store, s, i, action)
    store.commit(opening)
    session = store.get_session(s.session_id)
    resolved = store.get_action(action.action_id)
    assert session is not None and resolved is not None
    now = utc_now()
    store.commit(
        StepWrite(
            session=session,
            session_op="update",
            interaction=i.model_copy(update={"status": "completed"}),
            interaction_op="release",
            run=r2.model_copy(update={"status": "completed", "updated_at": now, "ended_at": now}),
            run_op="close",
            record_outcomes=[
                resolved.model_copy(update={"outcome": ToolOutcome(status="ok", output=output)})
            ],
        )
    )
    stored = store.get_action(action.action_id)
    assert stored is not None and stored.args == args and stored.outcome is not None
    assert stored.outcome.output == output
    if isinstance(store, DynamoBeamStore):
        assert max(stored_size(i) for i in scanned(store)) < DYNAMODB_ITEM_LIMIT


def test_small_content_puts_nothing_in_s3(store: BeamStore) -> None:
    s = steps.session(sid())
    i = steps.interaction(s.session_id)
    step, r = steps.begin(s, i, texts=("x" * 100_000,))
    store.commit(step)
    store.commit(steps.close(s, i, r))
    assert store.get_session_with_messages(s.session_id)[1][0].content == [TextPart(text="x" * 100_000)]
    if isinstance(store, DynamoBeamStore):
        assert store.content.requests == {"PutObject": 0, "GetObject": 0}
        assert store.content.bucket is not None
        assert store.content.client.list_objects_v2(Bucket=store.content.bucket).get("Contents", []) == []


def test_without_a_bucket_a_too_large_item_is_refused_and_nothing_written() -> None:
    with mock_aws():
        store = DynamoBeamStore.connect(f"riverbeam-{sid()[:8]}", client=dynamodb_client())
        s = steps.session(sid())
        i = steps.interaction(s.session_id)
        step, r = steps.begin(s, i)
        store.commit(step)
        before = snapshot(store)
        large = steps.close(s, i, r, texts=(large_text("reply"),))
        with pytest.raises(ContentTooLarge) as refused:
            store.commit(large)
        assert refused.value.what == "a message" and refused.value.limit == DYNAMODB_ITEM_LIMIT
        assert refused.value.size > LARGE
        assert str(refused.value).startswith("a message is ")
        with pytest.raises(ContentTooLarge):
            store.append_frames(
                r.run_id, [{"type": "text_delta", "frame_seq": 0, "text": large_text("f")}], 1
            )
        assert snapshot(store) == before
        # under DynamoDB's limit, as before: kept in the item
        store.commit(steps.close(s, i, r, texts=(large_text("fits", 300 * 1024),)))
        assert boto3.client("s3", region_name="us-east-1").list_buckets()["Buckets"] == []


def test_an_item_pointing_at_content_that_is_not_there_fails_its_read() -> None:
    from beam_store.dynamo.content import ContentMissing

    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="content")
        store = DynamoBeamStore.connect(
            f"riverbeam-{sid()[:8]}", client=dynamodb_client(), content_bucket="content", s3_client=s3
        )
        s = steps.session(sid())
        i = steps.interaction(s.session_id)
        step, _ = steps.begin(s, i, texts=(large_text("gone"),))
        store.commit(step)
        (key,) = [o["Key"] for o in s3.list_objects_v2(Bucket="content")["Contents"]]
        s3.put_object(Bucket="content", Key=key, Body=b"other bytes")
        fresh = DynamoBeamStore(store.client, store.table_name, content_bucket="content", s3_client=s3)
        with pytest.raises(ContentMissing, match="not the content its item points at"):
            fresh.list_messages(s.session_id)
        s3.delete_object(Bucket="content", Key=key)
        with pytest.raises(ContentMissing, match="is missing"):
            DynamoBeamStore(store.client, store.table_name, s3_client=s3).list_messages(s.session_id)


def test_a_state_over_the_item_limit_reads_back_whole(store: BeamStore) -> None:
    s = steps.session(sid())
    i = steps.interaction(s.session_id)
    step, r = steps.begin(s, i)
    store.commit(step)
    closing = steps.close(s, i, r)
    closing.state, closing.state_op = {"history": large_text("state")}, "put"
    store.commit(closing)
    assert store.get_state(i.interaction_id) == {"history": large_text("state")}
    if isinstance(store, DynamoBeamStore):
        assert all(stored_size(item) < DYNAMODB_ITEM_LIMIT for item in scanned(store))

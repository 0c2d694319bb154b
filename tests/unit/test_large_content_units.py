"""The parts of large content that need no AWS: which values a write sends to S3 (a transaction's total as
well as each item), what counts as a pointer, a long text delta sent as several, and a frame too large to
push sent as its stand-in."""

from __future__ import annotations

import json

from beam_store import Run
from beam_store.dynamo.content import (
    OFFLOAD_BYTES,
    TRANSACTION_BUDGET,
    ContentCache,
    plan,
    pointed,
    pointer,
    transaction_writes,
)
from riverbeam.aws.push import MAX_PUSH_BYTES, pushed_form
from riverbeam.models import FrameHeader, TextDeltaFrame, ToolResultFrame
from riverbeam.pipeline.frames import MAX_DELTA_CHARS, FrameEmitter


def _message_put(n: int, size: int) -> dict[str, object]:
    item = {"pk": {"S": "SESSION#s"}, "sk": {"S": f"MSG#{n:012d}"}, "content": {"S": "x" * size}}
    return {"Put": {"TableName": "t", "Item": item}}


def test_a_transaction_over_its_budget_sends_its_largest_values_until_it_fits() -> None:
    items = [_message_put(n, 250 * 1024) for n in range(16)]  # each under 256 KiB, 4 MB together
    writes = transaction_writes(items, {})
    plan(writes, transaction=True)
    chosen = [w for w in writes if w.chosen]
    assert chosen and len(chosen) < len(writes)
    assert sum(w.size for w in writes) <= TRANSACTION_BUDGET
    # each item alone fits: outside a transaction nothing would move
    alone = transaction_writes([_message_put(0, 250 * 1024)], {})
    plan(alone, transaction=False)
    assert not alone[0].chosen


def test_a_value_over_the_threshold_moves_and_the_key_and_small_attributes_stay() -> None:
    (write,) = transaction_writes([_message_put(1, OFFLOAD_BYTES + 1)], {})
    plan([write], transaction=True)
    assert [s.name for s in write.chosen] == ["content"]


def test_an_update_counts_the_whole_item_it_leaves_where_the_caller_knows_it() -> None:
    update = {
        "Key": {"pk": {"S": "ACTION#a"}, "sk": {"S": "ACTION"}},
        "UpdateExpression": "SET #n0 = :v0, #n1 = :v1",
        "ExpressionAttributeNames": {"#n0": "outcome", "#n1": "updated_at"},
        "ExpressionAttributeValues": {":v0": {"S": "y" * 200 * 1024}, ":v1": {"S": "now"}},
    }
    (unknown,) = transaction_writes([{"Update": dict(update)}], {})
    plan([unknown], transaction=True)
    assert not unknown.chosen  # 200 KB alone fits
    (known,) = transaction_writes([{"Update": update}], {"ACTION#a": 450 * 1024})  # its args stored before
    plan([known], transaction=True)
    assert [s.name for s in known.chosen] == [":v0"]


def test_only_the_exact_pointer_shape_is_a_pointer() -> None:
    made = pointer("b", "messages/abc", 10, "ab" * 32)
    assert pointed(made) == {"bucket": "b", "key": "messages/abc", "size": "10", "sha256": "ab" * 32}
    # maps an older item kept its JSON in (args of any shape) are not pointers
    assert pointed({"M": {"s3": {"M": {"bucket": {"S": "b"}}}}}) is None
    assert pointed({"M": {"s3": made["M"]["s3"], "other": {"S": "x"}}}) is None
    assert pointed({"S": json.dumps({"s3": "x"})}) is None


def test_the_cache_drops_the_least_recently_used_past_its_limit() -> None:
    cache = ContentCache(limit=10)
    cache.keep("a", "12345")
    cache.keep("b", "12345")
    assert cache.get("a") == "12345"  # used: b is now the oldest
    cache.keep("c", "123")
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == ("12345", None, "123")
    cache.keep("d", "x" * 11)  # larger than the whole cache: not kept
    assert cache.get("d") is None


def _run() -> Run:
    ids = {"run_id": "r", "session_id": "s", "interaction_id": "i"}
    return Run(**ids, agent_name="a", agent_id="a", status="running", created_at="t", updated_at="t")


def test_a_long_text_delta_is_sent_as_several_in_order() -> None:
    sent: list[FrameHeader] = []
    emitter = FrameEmitter(_run(), [sent.append])
    text = "".join(chr(0x3B1 + i % 20) for i in range(2 * MAX_DELTA_CHARS + 5))
    emitter.emit(TextDeltaFrame(text=text))
    emitter.emit(TextDeltaFrame(text="short"))
    assert [len(getattr(f, "text", "")) for f in sent] == [MAX_DELTA_CHARS, MAX_DELTA_CHARS, 5, 5]
    assert "".join(getattr(f, "text", "") for f in sent[:3]) == text
    assert [f.frame_seq for f in sent] == [0, 1, 2, 3]
    # even escaped throughout, one delta stays under API Gateway's 128 KB message
    worst = TextDeltaFrame(text="\x01" * MAX_DELTA_CHARS, session_id="s" * 36, run_id="r" * 36)
    assert len(pushed_form(worst)) == len(worst.model_dump_json().encode()) <= MAX_PUSH_BYTES


def test_a_frame_too_large_to_push_is_pushed_as_a_stand_in_naming_its_size() -> None:
    ids = {"session_id": "s", "interaction_id": "i", "run_id": "r", "frame_seq": 7}
    small = ToolResultFrame(**ids, tool_call_id="c", name="dump", status="ok", output="x")
    assert pushed_form(small) == small.model_dump_json().encode()
    large = ToolResultFrame(**ids, tool_call_id="c", name="dump", status="ok", output="x" * 600_000)
    stand_in = json.loads(pushed_form(large))
    assert stand_in == {
        "type": "tool_result",
        **ids,
        "truncated": True,
        "size": len(large.model_dump_json().encode()),
    }

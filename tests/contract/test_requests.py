"""The idempotency records (`claim_request`, `keep_answer`, `release_request`, `get_request`) on every
store: one claim of a caller's request_id wins, the others learn who holds it and its answer from the
refused write; a record past its time is ignored; another caller's same request_id is another record."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from beam_store import BeamStore, DynamoBeamStore, RequestRecord

from tests.support.concurrency import race
from tests.support.contract import sid

NOW = 2_000_000_000  # epoch seconds
DAY = 24 * 3600
ANSWER = {"ack": {"run_id": "r1", "big": 1e20, "exact": 12345678901234567890, "flag": True, "none": None}}


def record(user: str = "u1", request_id: str | None = None, **changes: Any) -> RequestRecord:
    fields: dict[str, Any] = {
        "user_id": user,
        "request_id": request_id or sid(),
        "request_sha256": "a" * 64,
        "status": "in_progress",
        "claim_id": sid(),
        "created_at": "2033-05-18T03:33:20.000000Z",
        "lease_expires_at": NOW + 60,
        "expires_at": NOW + DAY,
    }
    return RequestRecord(**(fields | changes))


@contextmanager
def requests_sent(store: BeamStore) -> Iterator[list[str]]:
    """The DynamoDB operations the store sends meanwhile (none are counted for InMemoryStore)."""
    sent: list[str] = []
    if not isinstance(store, DynamoBeamStore):
        yield sent
        return

    def count(model: Any, **_: Any) -> None:
        sent.append(model.name)

    events = store.client.meta.events
    events.register("before-call.dynamodb", count)
    try:
        yield sent
    finally:
        events.unregister("before-call.dynamodb", count)


def test_the_first_claim_holds_the_request_id_and_a_second_learns_it(store: BeamStore) -> None:
    first = record()
    assert store.claim_request(first, NOW) is None
    assert store.get_request("u1", first.request_id, NOW) == first
    second = record(request_id=first.request_id, request_sha256="b" * 64)
    with requests_sent(store) as sent:
        held = store.claim_request(second, NOW + 1)
    assert held == first  # the holder as the refused write found it
    assert sent in ([], ["PutItem"])  # learnt without a second read
    assert store.get_request("u1", first.request_id, NOW) == first  # nothing written


def test_an_answer_is_kept_by_its_claim_only(store: BeamStore) -> None:
    first = record()
    store.claim_request(first, NOW)
    assert not store.keep_answer("u1", first.request_id, sid(), {"other": 1})  # another claim's
    assert store.keep_answer("u1", first.request_id, first.claim_id, ANSWER)
    kept = store.get_request("u1", first.request_id, NOW)
    assert kept is not None and kept.status == "completed" and kept.answer == ANSWER
    assert isinstance(kept.answer["ack"]["big"], float) and kept.answer["ack"]["flag"] is True
    assert not store.keep_answer("u1", first.request_id, first.claim_id, {"again": 1})  # once
    # a retry, even long past the first's lease, is told the answer
    held = store.claim_request(record(request_id=first.request_id), NOW + DAY - 1)
    assert held is not None and held.status == "completed" and held.answer == ANSWER


def test_another_users_same_request_id_is_another_record(store: BeamStore) -> None:
    mine = record("alice")
    store.claim_request(mine, NOW)
    theirs = record("bob", request_id=mine.request_id)
    assert store.claim_request(theirs, NOW) is None
    assert store.get_request("bob", mine.request_id, NOW) == theirs
    assert store.get_request("alice", mine.request_id, NOW) == mine
    assert store.get_request("mallory", mine.request_id, NOW) is None


def test_a_record_past_its_time_is_ignored_and_its_request_id_free(store: BeamStore) -> None:
    old = record()
    store.claim_request(old, NOW)
    store.keep_answer("u1", old.request_id, old.claim_id, ANSWER)
    at_expiry = NOW + DAY
    assert store.get_request("u1", old.request_id, at_expiry - 1) is not None
    assert store.get_request("u1", old.request_id, at_expiry) is None  # still stored, ignored
    fresh = record(request_id=old.request_id, lease_expires_at=at_expiry + 60, expires_at=at_expiry + DAY)
    assert store.claim_request(fresh, at_expiry) is None
    assert store.get_request("u1", old.request_id, at_expiry) == fresh


def test_a_claim_whose_process_died_is_taken_over_after_its_lease(store: BeamStore) -> None:
    dead = record()
    store.claim_request(dead, NOW)
    assert store.claim_request(record(request_id=dead.request_id), NOW + 59) == dead
    taker = record(request_id=dead.request_id, lease_expires_at=NOW + 120)
    assert store.claim_request(taker, NOW + 60) is None
    assert not store.keep_answer("u1", dead.request_id, dead.claim_id, ANSWER)  # too late: not its own
    assert store.keep_answer("u1", dead.request_id, taker.claim_id, ANSWER)


def test_a_release_frees_the_request_id_of_its_own_claim_only(store: BeamStore) -> None:
    first = record()
    store.claim_request(first, NOW)
    store.release_request("u1", first.request_id, sid())  # another claim's release: no effect
    assert store.get_request("u1", first.request_id, NOW) == first
    store.release_request("u1", first.request_id, first.claim_id)
    assert store.get_request("u1", first.request_id, NOW) is None
    store.release_request("u1", first.request_id, first.claim_id)  # gone: no error
    assert store.claim_request(record(request_id=first.request_id), NOW) is None


def test_of_concurrent_claims_of_one_request_id_exactly_one_wins(store: BeamStore) -> None:
    request_id = sid()
    claims = [record(request_id=request_id) for _ in range(8)]
    answers = race(len(claims), lambda k: store.claim_request(claims[k], NOW))
    winners = [claims[k] for k, held in enumerate(answers) if held is None]
    assert len(winners) == 1
    assert all(held == winners[0] for held in answers if held is not None)
    assert store.get_request("u1", request_id, NOW) == winners[0]


def test_the_table_item_carries_its_ttl_as_a_number(store: BeamStore) -> None:
    if not isinstance(store, DynamoBeamStore):
        pytest.skip("InMemoryStore keeps no table item")
    kept = record()
    store.claim_request(kept, NOW)
    key = {"pk": {"S": f"REQUEST#{kept.request_id}#u1"}, "sk": {"S": "REQUEST"}}
    item = store.client.get_item(TableName=store.table_name, Key=key)["Item"]
    assert item["expires_at"] == {"N": str(NOW + DAY)}  # the table's TTL attribute, epoch seconds

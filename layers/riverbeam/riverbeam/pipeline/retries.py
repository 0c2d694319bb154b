"""Retries are safe: a request sent again with its `request_id`, by the same caller within a day, gets the
first answer and starts nothing (CONTRACT 12). What is compared is `request_sha256`: the request as
validated, without its `auth_context` (the caller is part of the key).

An invoke's request_id has an idempotency record in the store, keyed by the caller and the request_id:

    claim     before anything else, one conditional write; where a record holds the request_id already,
              the request is answered from it: another request's hash is BEM-043, one still being
              answered BEM-044, else its first answer (a Result, or a StreamAck) as it was
    keep      the answer, once there is one: a streamed invoke's StreamAck as soon as its run is opened
              (and handed on), a non-streamed one's Result once its run ended
    release   on a refusal or a failure: the request_id is free again, so the retry is answered afresh

A resume needs no record of its own: its resolved actions are the record. Each one's stored response keeps
the request_id that answered it, who answered, when, and the hash of that resume, all written by the one
conditional write that resolved them; `resumed_before` recognises a retry from them at no extra cost.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from beam_store import Action, RequestRecord, args_sha256, new_id

from ..errors import BeamError
from ..models import ActionResponseEnvelope, AgentResult, InvokeRequest, ResumeRequest, RunJob, StreamAck
from .intake import normal_uuid
from .setup import Setup

logger = logging.getLogger(__name__)
# how long a request_id is kept: a request sent again later is a new request
KEPT_SECONDS = 24 * 3600
Answer = AgentResult | StreamAck


class Replayed(Exception):
    """Not a failure: the request was answered before; `job` names the run its first answer opened."""

    def __init__(self, job: RunJob) -> None:
        super().__init__(f"answered before: run {job.run_id}")
        self.job = job


def request_sha256(request: InvokeRequest | ResumeRequest) -> str:
    """The SHA-256 of the request as validated (defaults filled in, ids in their canonical form), without
    `auth_context`, as canonical JSON (args_sha256's form)."""
    body = request.model_dump(mode="json", exclude={"auth_context"})
    for action in body.get("actions", []):
        action["action_id"] = normal_uuid(action["action_id"]) or action["action_id"]
    return args_sha256(body)


def _epoch(moment: datetime) -> int:
    return int(moment.timestamp())


class Claim:
    """An invoke's hold on its request_id. Where `first` is set, the request was answered before: that is
    its answer, and it runs nothing. Otherwise it runs inside `with claim:`; `keep` stores its answer, and
    leaving the block by an exception before that frees the request_id."""

    def __init__(self, setup: Setup, record: RequestRecord | None, first: Answer | None = None) -> None:
        self.setup, self.record, self.first = setup, record, first
        self.kept = False

    def keep(self, answer: Answer) -> None:
        """Store the answer (once; nothing without a request_id). Where that fails, the answer stands and
        the claim lapses (a retry gets BEM-044 until then)."""
        record = self.record
        if record is None or self.kept:
            return
        self.kept = True
        kind = "result" if isinstance(answer, AgentResult) else "ack"
        try:
            stored = self.setup.store.keep_answer(
                record.user_id, record.request_id, record.claim_id, {kind: answer.model_dump(mode="json")}
            )
        except Exception:
            logger.exception(
                "the answer of a request could not be kept", extra={"request_id": record.request_id}
            )
            return
        if not stored:
            logger.warning(
                "a request's claim lapsed before its answer", extra={"request_id": record.request_id}
            )

    def __enter__(self) -> Claim:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: Any) -> None:
        record = self.record
        # a refusal or a failure frees it; the process ending (SystemExit, KeyboardInterrupt) leaves it
        # to lapse, as a process killed outright would
        if not isinstance(error, Exception) or record is None or self.kept:
            return
        try:
            self.setup.store.release_request(record.user_id, record.request_id, record.claim_id)
        except Exception:
            logger.exception(
                "a failed request's claim could not be released", extra={"request_id": record.request_id}
            )


def claim(setup: Setup, request: InvokeRequest) -> Claim:
    """The request's claim on its request_id (a claim that holds nothing where it has none); a request
    that was answered before gets `first`, or BEM-043 / BEM-044 (the module's comment)."""
    if request.request_id is None:
        return Claim(setup, None)
    now = _epoch(setup.clock())
    record = RequestRecord(
        user_id=request.auth_context.user_id,
        request_id=str(request.request_id),
        request_sha256=request_sha256(request),
        status="in_progress",
        claim_id=new_id(),
        created_at=setup.now(),
        lease_expires_at=now + setup.request_lease_seconds,
        expires_at=now + KEPT_SECONDS,
    )
    held = setup.store.claim_request(record, now)
    if held is None:
        return Claim(setup, record)
    return Claim(setup, None, first=_first_answer(held, record.request_sha256))


def _first_answer(held: RequestRecord, sha256: str) -> Answer:
    if held.request_sha256 != sha256:
        raise BeamError(
            "BEM-043",
            f"request_id {held.request_id} was sent before with another request",
            field="request_id",
        )
    if held.status != "completed" or held.answer is None:
        raise BeamError(
            "BEM-044",
            f"the request with request_id {held.request_id} is still being answered; retry later",
            field="request_id",
        )
    if "result" in held.answer:
        return AgentResult.model_validate(held.answer["result"])
    return StreamAck.model_validate(held.answer["ack"])


def invoke_job(request: InvokeRequest, first: Answer) -> RunJob:
    """The job an invoke answered before opened (its run already queued, run, or running)."""
    return RunJob(
        kind="invoke",
        agent_name=request.agent_name,
        session_id=first.session_id or "",
        interaction_id=first.interaction_id or "",
        run_id=first.run_id or "",
        content=list(request.content),
    )


def _answered_by(action: Action, envelope: ActionResponseEnvelope, user_id: str, now: datetime) -> bool:
    """Whether this caller's response with this request_id resolved the action, within KEPT_SECONDS."""
    response = action.response
    return (
        response is not None
        and action.status in ("resolved", "cancelled")
        and response.request_sha256 is not None
        and response.request_id == str(envelope.request_id)
        and response.who == user_id
        and now - datetime.fromisoformat(response.when) < timedelta(seconds=KEPT_SECONDS)
    )


def resumed_before(
    request: ResumeRequest,
    found: Mapping[str, Action | None],
    responses: Mapping[str, ActionResponseEnvelope],
    sha256: str,
    now: datetime,
) -> None:
    """Raise `Replayed` with the first resume's job where the caller's request_ids answered these actions
    before with this very request; BEM-043 where they answered them with another. Returns where none of
    the actions was answered by one of them (the resume goes on, or is refused, as any other)."""
    user_id = request.auth_context.user_id
    mine = [
        action
        for action_id, envelope in responses.items()
        if (action := found.get(action_id)) is not None and _answered_by(action, envelope, user_id, now)
    ]
    if not mine:
        return
    if len(mine) != len(responses) or any(a.response and a.response.request_sha256 != sha256 for a in mine):
        raise BeamError(
            "BEM-043",
            "a request_id of this resume answered before with another request",
            field="actions.request_id",
        )
    first = mine[0]
    raise Replayed(
        RunJob(
            kind="resume",
            agent_name=request.agent_name,
            session_id=first.session_id,
            interaction_id=first.interaction_id,
            run_id=first.resolved_run_id or "",
            content=[p for p in request.content],
            action_ids=[a.action_id for a in mine],
        )
    )

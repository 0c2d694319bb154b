"""The default store: records in process memory, every step applied under one lock."""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Iterable
from typing import Any, TypeVar

from pydantic import BaseModel

from .conflicts import Part, first_conflict
from .memory_frames import FramesInMemory
from .memory_inbox import InboxInMemory
from .memory_outbox import OutboxInMemory
from .protocol import ExpiryEvents
from .records import (
    Action,
    ActionStatus,
    Connection,
    Interaction,
    InteractionStatus,
    Message,
    RequestRecord,
    Run,
    Session,
    action_cursor,
    expired,
    overdue,
    overdue_cursor,
)
from .step_write import StepWrite, numbered, opened_after
from .store_errors import RunClaimed, RunNotRunning

M = TypeVar("M", bound=BaseModel)


def _copy(record: M | None) -> M | None:
    return None if record is None else record.model_copy(deep=True)


def action_sort_key(action: Action) -> tuple[int, str, str]:
    """Pending first, then oldest first (the order of the table's interaction index)."""
    return (0 if action.status == "pending" else 1, action.created_at, action.action_id)


class InMemoryStore(FramesInMemory, InboxInMemory, OutboxInMemory):
    """Thread-safe; a step's conditions are all checked before any of its writes is applied."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sessions: dict[str, Session] = {}
        self._interactions: dict[str, Interaction] = {}
        self._runs: dict[str, Run] = {}
        self._actions: dict[str, Action] = {}
        self._messages: dict[str, list[Message]] = {}
        self._message_ids: set[str] = set()
        self._frames: dict[str, dict[int, tuple[int, str]]] = {}  # run -> seq -> (expires_at, JSON)
        self._connections: dict[str, Connection] = {}
        self._requests: dict[tuple[str, str], RequestRecord] = {}  # (user_id, request_id) -> record
        self._outbox: deque[tuple[float, str]] = deque()  # (expires at, epoch s; the event's JSON), in order
        self._states: dict[str, str] = {}  # interaction -> its state's JSON (a copy, as a table keeps it)

    def get_session(self, session_id: str) -> Session | None:
        with self._lock:
            return _copy(self._sessions.get(session_id))

    def get_interaction(self, interaction_id: str) -> Interaction | None:
        with self._lock:
            return _copy(self._interactions.get(interaction_id))

    def get_run(self, run_id: str) -> Run | None:
        with self._lock:
            return _copy(self._runs.get(run_id))

    def get_state(self, interaction_id: str) -> Any:
        with self._lock:
            kept = self._states.get(interaction_id)
        return json.loads(kept) if kept is not None else None

    def get_action(self, action_id: str) -> Action | None:
        with self._lock:
            return _copy(self._actions.get(action_id))

    def list_messages(
        self, session_id: str, *, after_seq: int = 0, limit: int | None = None
    ) -> list[Message]:
        with self._lock:
            found = [m.model_copy(deep=True) for m in self._messages.get(session_id, []) if m.seq > after_seq]
        return found if limit is None else found[:limit]

    def get_session_with_messages(
        self, session_id: str, *, last: int | None = None
    ) -> tuple[Session | None, list[Message]]:
        with self._lock:
            session = _copy(self._sessions.get(session_id))
            stored = self._messages.get(session_id, [])
            tail = stored if last is None else stored[max(len(stored) - last, 0) :] if last > 0 else []
            messages = [m.model_copy(deep=True) for m in tail]  # the window only: a step's cost stays flat
        return session, messages

    def list_runs(self, interaction_id: str) -> list[Run]:
        with self._lock:
            runs = [
                r.model_copy(deep=True) for r in self._runs.values() if r.interaction_id == interaction_id
            ]
        return sorted(runs, key=lambda r: (r.created_at, r.run_id))

    def list_actions(self, interaction_id: str) -> list[Action]:
        with self._lock:
            found = [
                a.model_copy(deep=True) for a in self._actions.values() if a.interaction_id == interaction_id
            ]
        return sorted(found, key=action_sort_key)

    def list_session_actions(
        self,
        session_id: str,
        *,
        status: ActionStatus | None = None,
        after: str | None = None,
        limit: int | None = None,
    ) -> list[Action]:
        with self._lock:
            found = [
                a.model_copy(deep=True)
                for a in self._actions.values()
                if a.session_id == session_id and status in (None, a.status)
            ]
        ordered = sorted(found, key=action_cursor)
        ordered = [a for a in ordered if after is None or action_cursor(a) > after]
        return ordered if limit is None else ordered[: max(limit, 0)]

    def expire_action(
        self, action_id: str, now: str, *, outbox: ExpiryEvents | None = None
    ) -> tuple[Action | None, bool]:
        with self._lock:
            current = self._actions.get(action_id)
            if current is None or not overdue(current, now):
                return _copy(current), False
            current = expired(current, now)
            events = list(outbox(current.model_copy(deep=True))) if outbox is not None else []
            self._actions[action_id] = current
            self._keep_events(events)
            return _copy(current), True

    def list_overdue_actions(
        self, now: str, *, after: str | None = None, limit: int | None = None
    ) -> list[Action]:
        with self._lock:
            found = [a.model_copy(deep=True) for a in self._actions.values() if overdue(a, now)]
        ordered = sorted(found, key=overdue_cursor)
        ordered = [a for a in ordered if after is None or overdue_cursor(a) > after]
        return ordered if limit is None else ordered[: max(limit, 0)]

    def get_interaction_waiting(self, interaction_id: str) -> tuple[Interaction | None, list[Action]]:
        with self._lock:
            interaction = _copy(self._interactions.get(interaction_id))
            pending = [
                a.model_copy(deep=True)
                for a in self._actions.values()
                if a.interaction_id == interaction_id and a.status == "pending"
            ]
        return interaction, sorted(pending, key=action_sort_key)

    def settle_interaction(
        self,
        interaction_id: str,
        status: InteractionStatus,
        *,
        session_id: str,
        seen_updated_at: str,
        now: str,
    ) -> bool:
        with self._lock:
            current = self._interactions.get(interaction_id)
            session = self._sessions.get(session_id)
            if (
                current is None
                or session is None
                or current.session_id != session_id
                or current.active_run_id is not None
                or current.updated_at != seen_updated_at
            ):
                return False
            self._interactions[interaction_id] = current.model_copy(
                update={"status": status, "updated_at": now}
            )
            if status != "in_progress":
                left = {k: v for k, v in session.open_interactions.items() if k != interaction_id}
                self._sessions[session_id] = session.model_copy(update={"open_interactions": left})
            return True

    def claim_run(self, run_id: str, claimed_by: str, lease_expires_at: str, now: str) -> Run:
        with self._lock:
            run = self._runs.get(run_id)
            if run is None or run.status != "running":
                raise RunNotRunning("the run is not running")
            if run.claimed_by is not None:
                raise RunClaimed(run.model_copy(deep=True))
            claimed = run.model_copy(
                update={"claimed_by": claimed_by, "lease_expires_at": lease_expires_at, "updated_at": now}
            )
            self._runs[run_id] = claimed
            return claimed.model_copy(deep=True)

    def remove_grant(self, session_id: str, grant_id: str, user_id: str) -> bool:
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None or session.user_id != user_id or grant_id not in session.grants:
                return False
            left = {k: v for k, v in session.grants.items() if k != grant_id}
            self._sessions[session_id] = session.model_copy(update={"grants": left})
            return True

    def reserve_session(self, session: Session) -> Session:
        with self._lock:
            stored = self._sessions.setdefault(session.session_id, session.model_copy(deep=True))
            return stored.model_copy(deep=True)

    def put_connection(self, connection: Connection) -> None:
        with self._lock:
            self._connections[connection.connection_id] = connection.model_copy(deep=True)

    def get_connection(self, connection_id: str) -> Connection | None:
        with self._lock:
            return _copy(self._connections.get(connection_id))

    def delete_connection(self, connection_id: str) -> None:
        with self._lock:
            self._connections.pop(connection_id, None)

    def list_connections(self, session_id: str) -> list[Connection]:
        now = time.time()
        with self._lock:
            found = [
                c.model_copy(deep=True)
                for c in self._connections.values()
                if c.session_id == session_id and c.expires_at > now
            ]
        return sorted(found, key=lambda c: c.connection_id)

    # idempotency records

    def claim_request(self, record: RequestRecord, now: int) -> RequestRecord | None:
        key = (record.user_id, record.request_id)
        with self._lock:
            held = self._requests.get(key)
            if held is not None and held.holds(now):
                return held.model_copy(deep=True)
            self._requests[key] = record.model_copy(deep=True)
            return None

    def keep_answer(self, user_id: str, request_id: str, claim_id: str, answer: dict[str, Any]) -> bool:
        with self._lock:
            held = self._requests.get((user_id, request_id))
            if held is None or held.claim_id != claim_id or held.status != "in_progress":
                return False
            kept = {"status": "completed", "answer": json.loads(json.dumps(answer))}
            self._requests[(user_id, request_id)] = held.model_copy(update=kept)
            return True

    def release_request(self, user_id: str, request_id: str, claim_id: str) -> None:
        with self._lock:
            held = self._requests.get((user_id, request_id))
            if held is not None and held.claim_id == claim_id:
                del self._requests[(user_id, request_id)]

    def get_request(self, user_id: str, request_id: str, now: int) -> RequestRecord | None:
        with self._lock:
            held = self._requests.get((user_id, request_id))
            return _copy(held) if held is not None and held.expires_at > now else None

    def records(self) -> list[BaseModel]:
        """Every session, interaction, run, action, message and idempotency record it holds (copies): what
        a table scan is to DynamoDB, for tests and debugging."""
        with self._lock:
            kinds: list[Iterable[BaseModel]] = [
                self._sessions.values(),
                self._interactions.values(),
                self._runs.values(),
                self._actions.values(),
                (m for messages in self._messages.values() for m in messages),
                self._requests.values(),
            ]
            return [record.model_copy(deep=True) for kind in kinds for record in kind]

    def commit(self, step: StepWrite) -> list[Message]:
        with self._lock:
            self._check(step)
            return self._apply(step)

    def _keep_interaction(self, step: StepWrite, now: str) -> None:
        interaction = step.interaction
        if step.interaction_op == "create":
            self._interactions[interaction.interaction_id] = interaction.model_copy(
                deep=True, update={"status": "in_progress", "active_run_id": step.run.run_id}
            )
            return
        stored = self._interactions[interaction.interaction_id]
        lock = step.run.run_id if step.interaction_op == "acquire" else None
        status = "in_progress" if step.interaction_op == "acquire" else interaction.status
        update: dict[str, object] = {"status": status, "active_run_id": lock, "updated_at": now}
        if step.interaction_op == "acquire" and interaction.requester_groups is not None:
            update["requester_groups"] = list(interaction.requester_groups)
        self._interactions[interaction.interaction_id] = stored.model_copy(update=update)

    def _keep_state(self, step: StepWrite) -> None:
        interaction_id = step.interaction.interaction_id
        if step.state_op == "put":
            self._states[interaction_id] = json.dumps(step.state)
        elif step.state_op == "delete":
            self._states.pop(interaction_id, None)

    def _check(self, step: StepWrite) -> None:
        """Every condition of the step, against the records as they are (conflicts.py: which one wins)."""

        def action(action_id: str) -> Action | None:  # a copy: the conflict carries it out of the lock
            return _copy(self._actions.get(action_id))

        found: dict[Part, BaseModel | None] = {
            **{("resolve", a.action_id): action(a.action_id) for a in step.resolve_actions},
            **{("outcome", a.action_id): action(a.action_id) for a in step.record_outcomes},
            **{("open", a.action_id): action(a.action_id) for a in step.open_actions},
            **{("told", a.action_id): action(a.action_id) for a in step.tell_expired},
            ("session", step.session.session_id): self._sessions.get(step.session.session_id),
            ("interaction", step.interaction.interaction_id): self._interactions.get(
                step.interaction.interaction_id
            ),
            ("run", step.run.run_id): self._runs.get(step.run.run_id),
            **{("message", d.message_id): None for d in step.messages if d.message_id in self._message_ids},
        }
        conflict = first_conflict(step, found)
        if conflict is not None:
            raise conflict

    def _apply(self, step: StepWrite) -> list[Message]:
        now, sid = step.run.updated_at, step.session.session_id
        current = self._sessions.get(sid)
        last_seq = current.last_seq if current else 0
        changes: dict[str, object] = {"updated_at": now, "last_seq": last_seq + len(step.messages)}
        changes |= {"last_active_at": now} if step.touch_last_active else {}
        base = current if current is not None else step.session
        changes["open_interactions"] = opened_after(step, base.open_interactions, last_seq + 1)
        changes["grants"] = base.grants | {g.grant_id: g for g in step.add_grants}
        self._sessions[sid] = base.model_copy(deep=True, update=changes)

        self._keep_interaction(step, now)
        self._runs[step.run.run_id] = step.run.model_copy(deep=True)
        self._keep_state(step)

        for action in step.resolve_actions:
            self._actions[action.action_id] = self._actions[action.action_id].model_copy(
                deep=True,
                update={
                    "status": action.status,
                    "response": action.response,
                    "resolved_run_id": action.resolved_run_id,
                    "run_args": action.run_args,
                    "run_args_sha256": action.run_args_sha256,
                    "votes": action.votes,
                    "updated_at": now,
                },
            )
        for action in step.open_actions:
            self._actions.setdefault(action.action_id, action.model_copy(deep=True))
        for action in step.record_outcomes:  # denied as it was to run: its status and response too
            denied = (
                {"status": action.status, "response": action.response} if action.status == "denied" else {}
            )
            self._actions[action.action_id] = self._actions[action.action_id].model_copy(
                deep=True, update={"outcome": action.outcome, "updated_at": now, **denied}
            )
        for action in step.tell_expired:
            self._actions[action.action_id] = self._actions[action.action_id].model_copy(
                update={"resolved_run_id": step.run.run_id, "updated_at": now}
            )

        written = numbered(step, last_seq)
        if step.frames:
            self._frames.setdefault(step.run.run_id, {}).update(
                {int(f["frame_seq"]): (step.frames_expire_at, json.dumps(f)) for f in step.frames}
            )
        self._messages.setdefault(sid, []).extend(m.model_copy(deep=True) for m in written)
        self._message_ids.update(m.message_id for m in written)
        self._keep_events(step.outbox)
        return written

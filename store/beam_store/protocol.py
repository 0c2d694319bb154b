from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from .approvers import ApprovalPage
from .outbox import OutboxEvent
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
)
from .step_write import StepWrite

# the events an expiry publishes, made from the action as the expiry stores it
ExpiryEvents = Callable[[Action], Sequence[OutboxEvent]]


@runtime_checkable
class BeamStore(Protocol):
    """Where the execution records live. Every read is by id or by parent; every step is atomic."""

    def get_session(self, session_id: str) -> Session | None: ...

    def get_interaction(self, interaction_id: str) -> Interaction | None: ...

    def get_run(self, run_id: str) -> Run | None: ...

    def get_action(self, action_id: str) -> Action | None: ...

    def list_messages(
        self, session_id: str, *, after_seq: int = 0, limit: int | None = None
    ) -> list[Message]:
        """The session's messages with seq > after_seq, in seq order."""
        ...

    def get_session_with_messages(
        self, session_id: str, *, last: int | None = None
    ) -> tuple[Session | None, list[Message]]:
        """The session (with its `open_interactions`) and its messages in seq order, in one read: all of
        them, or the `last` ones only (a step's cost then stays flat however long the session grows)."""
        ...

    def list_runs(self, interaction_id: str) -> list[Run]:
        """The interaction's runs, oldest first."""
        ...

    def list_actions(self, interaction_id: str) -> list[Action]:
        """The interaction's actions, pending first, then oldest first."""
        ...

    def list_session_actions(
        self,
        session_id: str,
        *,
        status: ActionStatus | None = None,
        after: str | None = None,
        limit: int | None = None,
    ) -> list[Action]:
        """The session's actions (with `status` only, where given), by status then oldest first, after the
        cursor `after` (`action_cursor` of the last action of the page before); one Query on DynamoDB."""
        ...

    def expire_action(
        self, action_id: str, now: str, *, outbox: ExpiryEvents | None = None
    ) -> tuple[Action | None, bool]:
        """Store the action `expired` if it is pending and its `expires_at` <= `now` (one conditional
        write: a resolution racing it, conditional on the opposite, has exactly one outcome); returns
        the action as it is afterwards (None: no such action) and whether this call expired it (of
        expiries racing each other, one). `outbox` makes the events the expiry publishes from the
        expired action: they are kept in the same write, so only the expiry that wins has them."""
        ...

    def list_overdue_actions(
        self, now: str, *, after: str | None = None, limit: int | None = None
    ) -> list[Action]:
        """Pending actions of every session whose `expires_at` <= `now`, soonest to expire first, after
        the cursor `after` (`overdue_cursor` of the last action of the page before); one Query per page
        on DynamoDB. A listed action may have been resolved or expired a moment ago (an index catching
        up): its conditional write decides."""
        ...

    def get_interaction_waiting(self, interaction_id: str) -> tuple[Interaction | None, list[Action]]:
        """The interaction and its actions still pending, as the table holds them now (not as an index
        that may lag shows them): what the sweep decides an interaction's end from. An action a run left
        pending a moment ago is among them."""
        ...

    def settle_interaction(
        self,
        interaction_id: str,
        status: InteractionStatus,
        *,
        session_id: str,
        seen_updated_at: str,
        now: str,
    ) -> bool:
        """Store `status` on an interaction of `session_id` that no run holds and that nobody wrote since
        it was read (`updated_at` still `seen_updated_at`), and, for an ended status, take it out of the
        session's `open_interactions`: one conditional write. False where it is missing, held by a run, or
        changed meanwhile."""
        ...

    def claim_run(self, run_id: str, claimed_by: str, lease_expires_at: str, now: str) -> Run:
        """Claim a running run for one worker, once; returns the claimed run.

        Raises `RunNotRunning` when it is missing or ended, `RunClaimed` when another claim exists.
        """
        ...

    def append_frames(self, run_id: str, frames: Sequence[Mapping[str, Any]], expires_at: int) -> None:
        """Keep a run's frames (each a JSON object with its `frame_seq`) until `expires_at` (epoch s)."""
        ...

    def append_running_frames(
        self, run_id: str, frames: Sequence[Mapping[str, Any]], expires_at: int
    ) -> bool:
        """Keep frames as `append_frames` does, only while the run is `running` (each batch of 25 in one
        conditional write); False, and nothing more written, once it has ended or where it is missing: a
        worker that outlived its lease never writes over the frames of the run another worker closed."""
        ...

    def add_frame(self, run_id: str, frame: Mapping[str, Any], expires_at: int) -> bool:
        """Keep one frame where its `frame_seq` is free (no unexpired frame holds it); False, and nothing
        written, where one does: for a writer that numbers frames beside others (the sweep)."""
        ...

    def list_frames(
        self, run_id: str, *, after_seq: int = -1, limit: int | None = None
    ) -> list[dict[str, Any]]:
        """The run's unexpired frames with frame_seq > after_seq, in order."""
        ...

    def remove_grant(self, session_id: str, grant_id: str, user_id: str) -> bool:
        """Remove the standing grant `grant_id` of a session `user_id` owns (one conditional write); False,
        and nothing written, where the session, its owner or the grant is not so."""
        ...

    def reserve_session(self, session: Session) -> Session:
        """Create `session` unless one with its id exists; returns the stored session (new or existing)."""
        ...

    def put_connection(self, connection: Connection) -> None:
        """Subscribe a WebSocket connection to its session's frames (replacing one with the same id)."""
        ...

    def get_connection(self, connection_id: str) -> Connection | None: ...

    def delete_connection(self, connection_id: str) -> None:
        """Forget a connection; forgetting one that is gone is no error."""
        ...

    def list_connections(self, session_id: str) -> list[Connection]:
        """The session's unexpired connections."""
        ...

    def claim_request(self, record: RequestRecord, now: int) -> RequestRecord | None:
        """Store `record` (in progress) unless a record that still holds its caller's request_id at `now`
        (epoch s; `RequestRecord.holds`) is there: one conditional write. None where it was stored (the
        caller answers the request); else the record that holds it, as the refused write found it."""
        ...

    def keep_answer(self, user_id: str, request_id: str, claim_id: str, answer: dict[str, Any]) -> bool:
        """Store the answer of the claim `claim_id` (the record then `completed`); False, and nothing
        written, where the record is no longer that claim's (it lapsed and another took it)."""
        ...

    def release_request(self, user_id: str, request_id: str, claim_id: str) -> None:
        """Delete the record while it is the claim `claim_id`'s (the request failed: a retry starts
        afresh); no error where it is gone or another's."""
        ...

    def get_request(self, user_id: str, request_id: str, now: int) -> RequestRecord | None:
        """The record of the caller's request_id, None where there is none or it expired by `now`."""
        ...

    def add_votes(self, actions: Sequence[Action], now: str) -> None:
        """Store each action's `votes` (its last vote the new one), all or none, in one write: each must
        still be pending in its interaction and session, not past its time at `now`, and hold exactly the
        votes before the new one (so of concurrent votes, one is written and the others conflict).
        Raises `ActionConflict` (with the action as found) for the first that is not so."""
        ...

    def list_answerable(
        self,
        principals: Sequence[str],
        *,
        before: str | None = None,
        limit: int | None = None,
        now: str | None = None,
    ) -> ApprovalPage:
        """The pending actions any of `principals` (approvers.py: `user:<id>`, `group:<name>`) may answer,
        not past their time at `now`, across sessions, newest first, before the cursor `before`
        (`approval_cursor`); one Query per principal on DynamoDB. With the next page's cursor, if any."""
        ...

    def get_state(self, interaction_id: str) -> Any:
        """The interaction's state as its last step kept it (StepWrite.state), None where it has none."""
        ...

    def commit(self, step: StepWrite) -> list[Message]:
        """Write the whole step or nothing, its `outbox` events with it; returns the step's messages with
        their seq. The session's `open_interactions` change with it (step.opened_after); a run that
        leaves its interaction waiting keeps its `open_actions` where `get_interaction_waiting` reads them.

        Raises a `StoreConflict` subclass when a condition fails (action conflicts first, in the order
        given, then session, interaction, run), `StoreBusy` when contention outlasts the retries.
        """
        ...

"""Why a store refused a step. Raised before anything of the step is written."""

from __future__ import annotations

from .records import Action, Run


class StoreConflict(Exception):
    """A condition of the step did not hold; nothing of the step was written."""


class SessionMissing(StoreConflict):
    pass


class SessionOwnedByOther(StoreConflict):
    def __init__(self, owner_user_id: str) -> None:
        super().__init__("the session belongs to another user")
        self.owner_user_id = owner_user_id


class InteractionMissing(StoreConflict):
    pass


class InteractionInOtherSession(StoreConflict):
    def __init__(self, session_id: str) -> None:
        super().__init__("the interaction belongs to another session")
        self.session_id = session_id


class InteractionBusy(StoreConflict):
    def __init__(self, active_run_id: str) -> None:
        super().__init__("the interaction already has a run in progress")
        self.active_run_id = active_run_id


class RunNotRunning(StoreConflict):
    """The run was closed by someone else (for example after its lease expired)."""


class RunClaimed(StoreConflict):
    """Another worker claimed the run; `current` shows whom and until when."""

    def __init__(self, current: Run) -> None:
        super().__init__(f"run {current.run_id} is claimed by {current.claimed_by}")
        self.current = current


class RecordExists(StoreConflict):
    """A record that the step creates already exists."""


class ActionConflict(StoreConflict):
    """An action was not in the state the step required; `current` is what the store holds (or None)."""

    def __init__(self, action_id: str, current: Action | None) -> None:
        super().__init__(f"action {action_id} is not in the required state")
        self.action_id = action_id
        self.current = current


class StoreBusy(Exception):
    """The store kept refusing the step for contention and gave up after its bounded retries."""


class ContentTooLarge(Exception):
    """What a write would store is over a limit of the table (an item, a transaction) that no content
    bucket takes it under; nothing was written."""

    def __init__(self, what: str, size: int, limit: int) -> None:
        super().__init__(f"{what} is {size} bytes as stored; the limit is {limit} bytes")
        self.what, self.size, self.limit = what, size, limit

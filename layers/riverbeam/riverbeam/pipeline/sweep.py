"""The sweep: expires the pending actions past their time that nobody touched (a resume or the
interaction's next run expires them lazily too), in pages of the store's overdue list, soonest first.

For each action it expires (the same conditional write as the lazy path, so a resume racing it has
exactly one outcome), in this order:
  1. an `Approval Expired` event (expired_by `sweep`), kept in the outbox by the expiry's own write and
     handed to the RiverBeam's event sink, if any;
  2. its interaction, where it now waits on nothing, is closed `completed` (expiry.settle); the agent
     is told by the interaction's next run, as for a lazy expiry;
  3. an `action_expired` frame to the session's subscribers, and kept with the frames of the run that
     asked for the action (numbered after that run's last frame, so a late reader of the run gets it;
     the run's closing frames outlive its actions' times, execute._kept_until):

     {"type": "action_expired", "session_id", "interaction_id", "run_id": <the run that asked>,
      "frame_seq": <that run's next>, "action_id", "tool", "args_sha256", "expires_at", "expired_at"}

     It comes after the run's `done`: the run ended long before; the frame tells of its action.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from typing import Literal

from beam_store import Action
from beam_store.records import overdue_cursor

from ..models import FrameHeader
from . import approval_events as events
from .expiry import settle
from .frames import FrameSink
from .setup import DEFAULT_SWEEP_LIMIT, Setup

logger = logging.getLogger(__name__)
# overdue actions are read a page at a time (setup.DEFAULT_SWEEP_LIMIT: how many a sweep looks at)
SWEEP_PAGE = 100
# a frame number taken by another sweep is passed over; so many in a row means something else is wrong
MAX_FRAME_ATTEMPTS = 50


class ActionExpiredFrame(FrameHeader):
    """A pending action expired unanswered (the sweep's frame; the module's comment draws it)."""

    type: Literal["action_expired"] = "action_expired"
    action_id: str
    tool: str
    args_sha256: str
    expires_at: str | None = None
    expired_at: str


def _expire_overdue(setup: Setup, now: str, limit: int) -> list[Action]:
    """Every overdue action, up to `limit` looked at, expired here by its conditional write; those a
    resolution or another expiry took first are left as they are. A failed write costs its action alone
    (still pending: the next sweep finds it again), a failed page read the pages after it: what was
    expired before is returned all the same, to be told (it left the overdue index: no sweep sees it
    again)."""
    expired: list[Action] = []
    after: str | None = None
    seen = 0
    told = events.expiry_outbox("sweep")
    while seen < limit:
        try:
            page = setup.store.list_overdue_actions(now, after=after, limit=min(SWEEP_PAGE, limit - seen))
        except Exception:
            logger.exception("the overdue actions could not be read", extra={"after": after})
            break
        for listed in page:
            try:
                current, expired_here = setup.store.expire_action(listed.action_id, now, outbox=told)
            except Exception:
                logger.exception("an action was not expired", extra={"action_id": listed.action_id})
                continue
            if expired_here and current is not None:
                expired.append(current)
        seen += len(page)
        if len(page) < SWEEP_PAGE:
            break
        after = overdue_cursor(page[-1])
    return expired


def _frame(action: Action, frame_seq: int) -> ActionExpiredFrame:
    return ActionExpiredFrame(
        session_id=action.session_id,
        interaction_id=action.interaction_id,
        run_id=action.run_id,
        frame_seq=frame_seq,
        action_id=action.action_id,
        tool=action.tool,
        args_sha256=action.args_sha256,
        expires_at=action.expires_at,
        expired_at=action.updated_at,
    )


def _keep_frame(setup: Setup, action: Action, frame_seq: int) -> ActionExpiredFrame:
    """The action's frame, kept under `frame_seq` or, where another writer (a sweep beside this one) took
    that number first, the first number after theirs: numbers never collide, none is overwritten."""
    for _ in range(MAX_FRAME_ATTEMPTS):
        frame = _frame(action, frame_seq)
        if setup.store.add_frame(action.run_id, frame.model_dump(mode="json"), setup.frames_expire_at()):
            return frame
        taken = setup.store.list_frames(action.run_id, after_seq=frame_seq - 1)
        frame_seq = taken[-1]["frame_seq"] + 1 if taken else frame_seq + 1
    raise RuntimeError(f"no free frame number after {MAX_FRAME_ATTEMPTS} attempts")


def _send(on_frame: FrameSink | None, frame: ActionExpiredFrame) -> None:
    if on_frame is None:
        return
    try:
        on_frame(frame)
    except Exception:
        logger.exception("frame sink failed", extra={"run_id": frame.run_id})


def _tell_subscribers(setup: Setup, expired: list[Action], on_frame: FrameSink | None) -> None:
    """Keep each action's frame after its run's last one (the run's frames read once), then send it; a
    failure costs that frame alone (a failed read, that run's frames)."""
    by_run: dict[str, list[Action]] = defaultdict(list)
    for action in expired:
        by_run[action.run_id].append(action)
    for run_id, actions in by_run.items():
        try:
            kept = setup.store.list_frames(run_id)
        except Exception:
            logger.exception("the expiry frames were not kept", extra={"run_id": run_id})
            continue
        next_seq = kept[-1]["frame_seq"] + 1 if kept else 0
        for action in actions:
            try:
                frame = _keep_frame(setup, action, next_seq)
            except Exception:
                logger.exception("the expiry frame was not kept", extra={"run_id": run_id})
                continue
            next_seq = frame.frame_seq + 1
            _send(on_frame, frame)


def sweep(setup: Setup, on_frame: FrameSink | None, limit: int = DEFAULT_SWEEP_LIMIT) -> list[Action]:
    """Expire what is overdue now (by the setup's clock); returns the actions this sweep expired."""
    now = setup.now()
    expired = _expire_overdue(setup, now, limit)
    events.deliver(setup.events, events.approval_events(events.EXPIRED, expired, expired_by="sweep"))
    by_interaction: dict[str, set[str]] = defaultdict(set)
    for action in expired:
        by_interaction[action.interaction_id].add(action.action_id)
    for interaction_id, action_ids in by_interaction.items():
        try:
            settle(setup, interaction_id, action_ids, now)
        except Exception:  # the next run of the interaction still tells the agent
            logger.exception("an interaction was not closed", extra={"interaction_id": interaction_id})
    _tell_subscribers(setup, expired, on_frame)
    if expired:
        logger.info("actions expired", extra={"count": len(expired)})
    return expired

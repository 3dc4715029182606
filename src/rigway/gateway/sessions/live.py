"""In-memory state of the active sessions this gateway serves.

The store is the record; this is the hot path. Activity (screenshot, observe, input)
is counted here on every call and flushed to the store every few seconds and at end,
so a screenshot costs no SQL write.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from rigway.gateway.db.models import Session

# The newest launches a live session lists for the owner's console: a session that
# runs many short commands must not grow the list without end.
LAUNCHED_APPS_LISTED = 100


@dataclass(frozen=True, slots=True)
class LaunchedApp:
    """An app this session launched through the API and has not killed through it (it
    may have exited by itself since: the host reports only launches and kills)."""

    pid: int
    path: str


@dataclass(slots=True)
class LiveSession:
    id: str
    account_id: str
    rig_id: str
    api_key_id: str | None
    mode: str
    idle_timeout_s: int
    started_at: datetime
    last_activity_at: datetime
    action_count: int
    native_width: int | None
    native_height: int | None
    capture_mode: str | None
    has_unflushed_activity: bool = False
    # Input batches running on the host now: a batch with long delays can outlast the
    # idle timeout, and the session is not idle while it runs.
    batches_running: int = 0
    # Whether a dirty take (`/dirty` or observe) has reached this session's caller. The
    # host's damage is the rig's, not the session's: until then the caller has seen
    # nothing of the screen, so the first take reports the whole desktop as changed.
    has_taken_dirty: bool = False
    # An app session's window as the host last reported it (native x, y, w, h).
    app_window: tuple[int, int, int, int] | None = None
    record: bool = False
    # The store's owner epoch when this node took the session (`Session.owner_epoch`).
    owner_epoch: int = 0
    # "api", or "human" while a person who took control drives the input.
    control: str = "api"
    # What the owner's console shows this session launched, oldest first.
    launched_apps: list[LaunchedApp] = field(default_factory=list)

    @classmethod
    def from_row(cls, row: Session) -> LiveSession:
        return cls(
            id=row.id,
            account_id=row.account_id,
            rig_id=row.rig_id,
            api_key_id=row.api_key_id,
            mode=row.mode,
            idle_timeout_s=row.idle_timeout_s,
            started_at=row.started_at,
            last_activity_at=row.last_activity_at,
            action_count=row.action_count,
            native_width=row.native_width,
            native_height=row.native_height,
            capture_mode=row.capture_mode,
            record=row.record,
            owner_epoch=row.owner_epoch,
        )

    def record_activity(self, now: datetime, actions: int) -> None:
        self.last_activity_at = max(self.last_activity_at, now)
        self.count_actions(actions)

    def count_actions(self, actions: int) -> None:
        """Actions that are not activity (app launch and kill): counted in
        `action_count`, while the idle timer keeps running."""
        self.action_count += actions
        self.has_unflushed_activity = True

    def add_launched_app(self, pid: int, path: str) -> None:
        self.launched_apps.append(LaunchedApp(pid, path))
        del self.launched_apps[:-LAUNCHED_APPS_LISTED]

    def forget_launched_apps(self, pids: list[int] | None) -> None:
        """Forgets the apps killed: `pids`, or all of them (None)."""
        killed = set(pids or ())
        self.launched_apps = [
            app for app in self.launched_apps if pids is not None and app.pid not in killed
        ]

    def idle_deadline(self) -> datetime | None:
        """When it times out idle; None while an input batch runs (busy, not idle)."""
        if self.batches_running > 0:
            return None
        return self.last_activity_at + timedelta(seconds=self.idle_timeout_s)

    def age_deadline(self, max_age_s: float) -> datetime:
        return self.started_at + timedelta(seconds=max_age_s)

    def is_idle(self, now: datetime) -> bool:
        deadline = self.idle_deadline()
        return deadline is not None and now >= deadline

    def is_too_old(self, now: datetime, max_age_s: float) -> bool:
        return now >= self.age_deadline(max_age_s)

    def end_time(self, now: datetime, max_age_s: float) -> datetime:
        """When the session ends if it ends `now`: never past its idle deadline nor its
        maximum age. The reaper notices those up to an interval late, and a gateway
        that was down notices them later still; billing must not count either delay."""
        deadlines = [now, self.age_deadline(max_age_s)]
        if (idle := self.idle_deadline()) is not None:
            deadlines.append(idle)
        return max(self.started_at, min(deadlines))


def billed_minutes(started_at: datetime, until: datetime) -> int:
    """Whole minutes of wall clock, rounded up; any session bills at least one."""
    seconds = max(0.0, (until - started_at).total_seconds())
    return max(1, math.ceil(seconds / 60))


class LiveSessions:
    def __init__(self) -> None:
        self._by_id: dict[str, LiveSession] = {}
        self._by_rig: dict[str, str] = {}

    def add(self, live: LiveSession) -> None:
        self._by_id[live.id] = live
        self._by_rig[live.rig_id] = live.id

    def remove(self, session_id: str) -> LiveSession | None:
        live = self._by_id.pop(session_id, None)
        if live is not None and self._by_rig.get(live.rig_id) == session_id:
            del self._by_rig[live.rig_id]
        return live

    def get(self, session_id: str) -> LiveSession | None:
        return self._by_id.get(session_id)

    def for_rig(self, rig_id: str) -> LiveSession | None:
        session_id = self._by_rig.get(rig_id)
        return None if session_id is None else self._by_id.get(session_id)

    def all(self) -> list[LiveSession]:
        return list(self._by_id.values())

"""The session state machine: active → ended | failed, each transition exactly once.

Every end reason of docs/api.md (Sessions) has one code path into `end()`: client (DELETE or POST
/end), owner_kill (console or the host tray), idle_timeout and max_age (the reaper),
timeout (orphan cleanup at start), host_gone (host link lost past a grace) and
unpaired (the owner unpairs the rig).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession as DbSession
from sqlalchemy.ext.asyncio import async_sessionmaker

from rigway.gateway.accounts.repository import lock_account
from rigway.gateway.clock import Clock
from rigway.gateway.cluster.forwarding import ForwardToHolder
from rigway.gateway.cluster.holder_routes import HolderRoutes
from rigway.gateway.cluster.ownership import (
    HolderUrlOf,
    HolderUrlsOf,
    held_by_no_other_node,
    held_by_no_other_nodes,
)
from rigway.gateway.db.models import Rig, Session
from rigway.gateway.errors import (
    ApiAccessDisabled,
    Conflict,
    HostError,
    HostTimeout,
    OwnerForbids,
    RateLimited,
    RigBusy,
    ServiceUnavailable,
    SessionEnded,
    rig_not_found,
    session_not_found,
)
from rigway.gateway.hostlink.connection import (
    HostOpError,
    HostTimeoutError,
    HostUnavailableError,
)
from rigway.gateway.hostlink.registry import HostRegistry
from rigway.gateway.ids import new_id
from rigway.gateway.rigs import repository as rigs_repository
from rigway.gateway.rigs.schemas import displays_out
from rigway.gateway.sessions import repository
from rigway.gateway.sessions.live import LiveSession, LiveSessions, billed_minutes
from rigway.gateway.sessions.schemas import CreateSessionIn, SessionOut
from rigway.gateway.settings import GatewaySettings
from rigway.gateway.webhooks.outbox import SESSION_ENDED, SESSION_STARTED, enqueue_event
from rigway.protocol import ops

logger = logging.getLogger(__name__)

# Sessions the orphan sweeper looks at per pass (and locks, for that short transaction).
_SWEEP_PAGE = 100


class SessionService:
    def __init__(
        self,
        db_sessions: async_sessionmaker[DbSession],
        registry: HostRegistry,
        clock: Clock,
        settings: GatewaySettings,
    ) -> None:
        self._db_sessions = db_sessions
        self._registry = registry
        self._clock = clock
        self._settings = settings
        self.live = LiveSessions()
        self._end_locks: dict[str, asyncio.Lock] = {}
        self._background: set[asyncio.Task[None]] = set()
        # rig id -> {session id: end reason}: safety restores its host has yet to get.
        self._restores_owed: dict[str, dict[str, str]] = {}
        # Called after a transaction wrote webhook events (the dispatcher drains at once).
        self.on_events_written: Callable[[], None] = lambda: None
        # Called with the session id once a session ended (live streams close on it).
        self.on_session_ended: list[Callable[[str], Awaitable[None]]] = []
        # Told (session id, rig id, reason) of every session this node ended, for the
        # other nodes: the one holding the rig's link restores its host.
        self.on_ended_here: Callable[[str, str, str], None] = lambda *_ended: None
        # The address of the other node holding a rig's link, if any (cluster/ownership).
        self.holder_url: HolderUrlOf = held_by_no_other_node
        # Of these rigs, those another node holds, with its address (one lookup).
        self.holder_urls: HolderUrlsOf = held_by_no_other_nodes
        # Sessions another node serves, as their last forwarded request found them.
        self.holder_routes = HolderRoutes(clock)
        # Where the orphan sweeper's next page starts ("" from the first session).
        self._sweep_after = ""
        # Sessions this node ended, by reason (the metrics read it at scrape time).
        self.ended_by_reason: Counter[str] = Counter()

    # ---- reads ----

    def view(self, row: Session) -> SessionOut:
        live = self.live.get(row.id) if row.status == "active" else None
        last_activity_at = live.last_activity_at if live is not None else row.last_activity_at
        action_count = live.action_count if live is not None else row.action_count
        until = row.ended_at if row.ended_at is not None else self._clock.now()
        return SessionOut(
            session_id=row.id,
            rig_id=row.rig_id,
            mode=row.mode,  # type: ignore[arg-type]
            status=row.status,  # type: ignore[arg-type]
            started_at=row.started_at,
            ended_at=row.ended_at,
            ended_reason=row.ended_reason,  # type: ignore[arg-type]
            # A session that never started (failed) bills nothing.
            billed_minutes=0 if row.status == "failed" else billed_minutes(row.started_at, until),
            duration_seconds=int(max(0.0, (until - row.started_at).total_seconds())),
            last_activity_at=last_activity_at,
            action_count=action_count,
            idle_timeout_seconds=row.idle_timeout_s,
            capture_mode=row.capture_mode,
            native_width=row.native_width,
            native_height=row.native_height,
            desktop_state=None if live is None else self._registry.desktop_state(row.rig_id),
            displays=[] if live is None else displays_out(self._registry.displays(row.rig_id)),
            record=row.record,
            control="api" if live is None else live.control,  # type: ignore[arg-type]
            owner_active=live is not None and self._registry.owner_active(row.rig_id) is True,
            app_window=None if live is None or live.app_window is None else list(live.app_window),
        )

    async def get(self, account_id: str, session_id: str) -> SessionOut:
        """The session as this node knows it: the live parts (desktop state, displays,
        the owner's presence, control) only when it is live here."""
        return self.view(await self._row_for_account(account_id, session_id))

    async def get_anywhere(self, account_id: str, session_id: str) -> SessionOut:
        """`get`, answered by the node serving the session when that is another node
        (`ForwardToHolder`): only it knows the live parts."""
        row = await self._row_for_account(account_id, session_id)
        await self._forward_if_served_elsewhere(row)
        return self.view(row)

    async def list_active(self, account_id: str, api_key_id: str | None) -> list[SessionOut]:
        async with self._db_sessions() as db:
            rows = await repository.list_active(db, account_id, api_key_id)
        return [self.view(row) for row in rows]

    async def served_elsewhere(self, sessions: Sequence[SessionOut]) -> dict[str, list[str]]:
        """Of `sessions`, the active ones another node serves (whose live parts only it
        knows): their ids by that node's address."""
        elsewhere = [
            session
            for session in sessions
            if session.status == "active" and self.live.get(session.session_id) is None
        ]
        holders = await self.holder_urls([session.rig_id for session in elsewhere])
        served_by: dict[str, list[str]] = {}
        for session in elsewhere:
            holder = holders.get(session.rig_id)
            if holder is not None:
                served_by.setdefault(holder, []).append(session.session_id)
        return served_by

    async def require_live(self, account_id: str, session_id: str) -> LiveSession:
        """The active session for a session-scoped operation: 404 or 410 otherwise."""
        live = self.live.get(session_id)
        if live is not None and live.account_id == account_id:
            return live
        route = self.holder_routes.get(session_id, account_id)
        if route is not None:
            raise ForwardToHolder(route.holder_url, route.rig_id, session_id)
        row = await self._row_for_account(account_id, session_id)
        if row.status != "active":
            raise SessionEnded(f"session ended ({row.ended_reason or row.status})")
        holder = await self.holder_url(row.rig_id)
        if holder is not None:
            self.holder_routes.remember(session_id, account_id, row.rig_id, holder)
            raise ForwardToHolder(holder, row.rig_id, session_id)
        # Active in the store, served by no node now: a start still in flight, or its
        # host re-linking (to this node or another). Not ended: worth a retry.
        raise ServiceUnavailable("the session's host is not linked now; retry shortly")

    def record_activity(self, live: LiveSession, actions: int = 0) -> None:
        live.record_activity(self._clock.now(), actions)

    # ---- create ----

    async def create(
        self, account_id: str, api_key_id: str | None, request: CreateSessionIn
    ) -> SessionOut:
        row, owner_idle_s = await self._insert_active(account_id, api_key_id, request)
        live = LiveSession.from_row(row)
        self.live.add(live)
        try:
            started = await self._start_on_host(row, owner_idle_s)
        except (HostError, HostTimeout):
            # The record first: should it fail, the session stays live here, where the
            # reaper can still end it, rather than active in the store and nowhere else.
            async with self._db_sessions.begin() as db:
                await repository.transition(
                    db, row.id, to_status="failed", values={"ended_at": self._clock.now()}
                )
            self.live.remove(row.id)
            # The host may still finish starting it: tell it to stand down.
            self._spawn(self._restore_on_host(row.rig_id, row.id, "timeout"))
            raise
        live.native_width, live.native_height = started.native_width, started.native_height
        live.capture_mode = started.capture_mode
        async with self._db_sessions.begin() as db:
            await repository.set_host_facts(
                db,
                row.id,
                native_width=started.native_width,
                native_height=started.native_height,
                capture_mode=started.capture_mode,
            )
            row = await self._reload(db, row.id)
            # An owner kill can land while the host acknowledges: then it has ended
            # (and said so), and announcing a start now would come after its end.
            if row.status == "active":
                enqueue_event(
                    db,
                    account_id=account_id,
                    event=SESSION_STARTED,
                    data=self._event_data(row),
                    now=self._clock.now(),
                )
        self.on_events_written()
        return self.view(row)

    async def _insert_active(
        self, account_id: str, api_key_id: str | None, request: CreateSessionIn
    ) -> tuple[Session, int]:
        """The new active session's row, and the rig owner's idle delay for its host."""
        now = self._clock.now()
        try:
            async with self._db_sessions.begin() as db:
                # One creator per account at a time, so the concurrency cap holds under
                # races (PostgreSQL row lock; SQLite's BEGIN IMMEDIATE already serialises).
                await lock_account(db, account_id)
                rig = await rigs_repository.get_for_account(db, account_id, request.rig_id)
                if rig is None:
                    raise rig_not_found()
                if not rig.api_access_enabled:
                    raise ApiAccessDisabled("the rig's owner has not enabled API access")
                _check_owner_controls(rig, request)
                if not self._registry.is_online(rig.id):
                    holder = await self.holder_url(rig.id)
                    if holder is not None:
                        raise ForwardToHolder(holder, rig.id)
                    raise Conflict("the rig is offline", code="rig_offline")
                active = await repository.count_active(db, account_id)
                if active >= self._settings.max_concurrent_sessions:
                    raise RateLimited(
                        f"{active} of {self._settings.max_concurrent_sessions} "
                        "concurrent sessions in use; end one first",
                        code="concurrency_limit",
                        # A slot frees when a session ends, which no clock predicts;
                        # 30 s is a polite polling interval.
                        headers={
                            "Retry-After": "30",
                            "RateLimit-Limit": str(self._settings.max_concurrent_sessions),
                            "RateLimit-Remaining": "0",
                            "RateLimit-Reset": "30",
                        },
                    )
                row = Session(
                    id=new_id("ses"),
                    account_id=account_id,
                    rig_id=rig.id,
                    api_key_id=api_key_id,
                    mode=request.mode,
                    status="active",
                    started_at=now,
                    last_activity_at=now,
                    idle_timeout_s=(
                        self._settings.default_idle_timeout_s
                        if request.idle_timeout_seconds is None
                        else request.idle_timeout_seconds
                    ),
                    action_count=0,
                    record=request.record,
                )
                db.add(row)
        except IntegrityError as exc:
            raise RigBusy(await self._active_session_on(request.rig_id)) from exc
        return row, rig.owner_idle_s

    async def active_on(self, rig_id: str) -> str | None:
        """The id of the rig's active session in the store, on whichever node it lives."""
        async with self._db_sessions() as db:
            active = await repository.active_on_rig(db, rig_id)
        return None if active is None else active.id

    async def _active_session_on(self, rig_id: str) -> str | None:
        """The id of the rig's active session, read after the refused insert rolled back
        (None when that session ended in between)."""
        async with self._db_sessions() as db:
            active = await repository.active_on_rig(db, rig_id)
        return None if active is None else active.id

    async def _start_on_host(self, row: Session, owner_idle_s: int) -> ops.SessionStarted:
        connection = self._registry.get(row.rig_id)
        if connection is None:
            raise HostError("the rig went offline while the session started")
        body = ops.SessionStart(
            session_id=row.id,
            mode=row.mode,  # type: ignore[arg-type]
            owner_idle_s=owner_idle_s,
        ).model_dump()
        try:
            reply = await connection.request(
                ops.SESSION_START, body, self._settings.session_start_timeout_s
            )
            return ops.SessionStarted.model_validate(reply.body)
        except HostTimeoutError as exc:
            raise HostTimeout("the host did not acknowledge the session start") from exc
        except HostOpError as exc:
            raise HostError(f"the host could not start the session: {exc.detail}") from exc
        except (HostUnavailableError, ValueError) as exc:
            raise HostError(f"the host could not start the session ({exc})") from exc

    # ---- end ----

    async def end(
        self,
        session_id: str,
        reason: str,
        *,
        wait_for_host: bool = True,
        owner_epoch: int | None = None,
    ) -> Session:
        """Ends an active session once; ending an ended one returns it unchanged.

        A timer's end names the `owner_epoch` it saw: if another node took the session
        over since, nothing ends, and this node lets go of its stale copy."""
        # Ended wherever it was served: no request goes along a remembered route.
        self.holder_routes.forget(session_id)
        lock = self._end_locks.setdefault(session_id, asyncio.Lock())
        async with lock:
            live = self.live.get(session_id)
            now = self._clock.now()
            ended_at = now if live is None else live.end_time(now, self._settings.max_session_age_s)
            async with self._db_sessions.begin() as db:
                values: dict[str, object] = {"ended_at": ended_at, "ended_reason": reason}
                if live is not None:
                    values |= {
                        "last_activity_at": live.last_activity_at,
                        "action_count": live.action_count,
                    }
                won = await repository.transition(
                    db, session_id, to_status="ended", values=values, owner_epoch=owner_epoch
                )
                row = await self._reload(db, session_id)
                if won:
                    enqueue_event(
                        db,
                        account_id=row.account_id,
                        event=SESSION_ENDED,
                        data=self._event_data(row),
                        now=now,
                    )
            self._end_locks.pop(session_id, None)
        if won:
            self.ended_by_reason[reason] += 1
            self.on_events_written()
            self.live.remove(session_id)
            for listener in self.on_session_ended:
                await listener(session_id)
            logger.info("session %s ended: %s", session_id, reason)
            self.on_ended_here(session_id, row.rig_id, reason)
            restore = self._restore_on_host(row.rig_id, session_id, reason)
            if wait_for_host:
                await restore
            else:
                self._spawn(restore)
        elif owner_epoch is not None and row.status == "active":
            self.live.remove(session_id)
            logger.info("session %s is served by another node now", session_id)
        return row

    async def end_for_account(self, account_id: str, session_id: str, reason: str) -> SessionOut:
        """Ends the account's session; one served by another node is ended there
        (`ForwardToHolder`), with the activity it has yet to flush, and the answer
        comes after its host's safety restore, as here."""
        await self._forward_if_served_elsewhere(await self._row_for_account(account_id, session_id))
        return self.view(await self.end(session_id, reason))

    async def _restore_on_host(self, rig_id: str, session_id: str, reason: str) -> None:
        """Safety restore: best effort. A host that is away (or drops during the
        request) is owed it: the welcome of its next link lists sessions ended before
        its hello, and `pay_restores_owed` sends those that ended while it was
        connecting, between its hello and its attach."""
        connection = self._registry.get(rig_id)
        if connection is None:
            self._restores_owed.setdefault(rig_id, {})[session_id] = reason
            return
        body = ops.SessionEnd(session_id=session_id, reason=reason).model_dump()
        try:
            await connection.request(ops.SESSION_END, body, self._settings.host_timeout_s)
        except HostUnavailableError as exc:
            self._restores_owed.setdefault(rig_id, {})[session_id] = reason
            logger.warning("safety restore of %s on %s deferred: %s", session_id, rig_id, exc)
        except (HostTimeoutError, HostOpError) as exc:
            logger.warning("safety restore of %s on %s failed: %s", session_id, rig_id, exc)

    def pay_restores_owed(self, rig_id: str) -> None:
        """Right after a host's link attaches: send it every restore it missed. Ending
        a session a host no longer runs is a no-op there, so sending one twice is safe."""
        for session_id, reason in self._restores_owed.pop(rig_id, {}).items():
            self._spawn(self._restore_on_host(rig_id, session_id, reason))

    # ---- timers ----

    async def reap(self) -> list[str]:
        """Ends idle and over-age sessions; flushes activity. Returns ended ids."""
        now = self._clock.now()
        ended: list[str] = []
        for live in self.live.all():
            reason = None
            if live.is_too_old(now, self._settings.max_session_age_s):
                reason = "max_age"
            elif live.is_idle(now):
                reason = "idle_timeout"
            if reason is not None:
                await self.end(live.id, reason, wait_for_host=False, owner_epoch=live.owner_epoch)
                ended.append(live.id)
        await self.flush_activity()
        return ended

    async def flush_activity(self) -> None:
        pending = [live for live in self.live.all() if live.has_unflushed_activity]
        if not pending:
            return
        activities = [
            repository.Activity(live.id, live.last_activity_at, live.action_count)
            for live in pending
        ]
        for live in pending:
            live.has_unflushed_activity = False
        try:
            async with self._db_sessions.begin() as db:
                await repository.flush_activity(db, activities)
        except BaseException:
            # Written by the next flush instead (counts only rise, so a later one is safe).
            for live in pending:
                live.has_unflushed_activity = True
            raise

    async def load_active(self) -> list[LiveSession]:
        """At start: adopt the store's active sessions (orphans until their host returns)."""
        async with self._db_sessions() as db:
            rows = await repository.all_active(db)
        for row in rows:
            self.live.add(LiveSession.from_row(row))
        return self.live.all()

    async def end_if_host_absent(self, rig_id: str, reason: str) -> str | None:
        live = self.live.for_rig(rig_id)
        if live is None or self._registry.is_online(rig_id):
            return None
        if await self.holder_url(rig_id) is not None:
            # Its host linked to another node of the service, which serves the session
            # now: this node only lets go of it.
            self.live.remove(live.id)
            return None
        await self.end(live.id, reason, wait_for_host=False, owner_epoch=live.owner_epoch)
        return live.id

    def note_ended_elsewhere(self, notice: dict[str, Any]) -> None:
        """The notice of the node that ended a session (`ended_elsewhere`)."""
        self._spawn(
            self.ended_elsewhere(
                str(notice.get("session_id")), str(notice.get("rig_id")), str(notice.get("reason"))
            )
        )

    async def ended_elsewhere(self, session_id: str, rig_id: str, reason: str) -> None:
        """Another node ended this session (in the store, once): if this node served
        it, it stops, and the host linked here gets its safety restore."""
        self.holder_routes.forget(session_id)
        live = self.live.remove(session_id)
        if live is None:
            return
        for listener in self.on_session_ended:
            await listener(session_id)
        if self._registry.is_online(rig_id):
            await self._restore_on_host(rig_id, session_id, reason)

    async def adopt_reported(self, rig_id: str, session_ids: list[str]) -> None:
        """A host linking here still runs these sessions: those active in the store for
        this rig and not live here (served by another node before, or by this node's
        previous life) are served here from now on."""
        missing = [sid for sid in session_ids if self.live.get(sid) is None]
        if not missing:
            return
        async with self._db_sessions.begin() as db:
            for session_id in missing:
                row = await repository.get(db, session_id)
                if row is None or row.status != "active" or row.rig_id != rig_id:
                    continue
                # The epoch fences the previous node's timers: they end nothing now.
                epoch = await repository.take_over(db, session_id)
                if epoch is not None:
                    live = LiveSession.from_row(row)
                    live.owner_epoch = epoch
                    self.live.add(live)

    async def sweep_orphans(self, grace_s: float) -> list[str]:
        """One pass of the orphan sweeper, which any node may run (several nodes only).

        Active sessions whose host no node holds now are marked absent; those absent for
        `grace_s` end `host_gone`, fenced by the epoch read (a host that re-linked in
        between wins). A page of sessions at a time, rows another node's pass holds
        skipped. Returns the ids it ended."""
        now = self._clock.now()
        due: list[tuple[str, int]] = []
        async with self._db_sessions.begin() as db:
            rows = await repository.lock_active_page(db, self._sweep_after, _SWEEP_PAGE)
            self._sweep_after = rows[-1].id if len(rows) == _SWEEP_PAGE else ""
            present, absent = [], []
            for row in rows:
                if await self._is_host_linked(row):
                    present.append(row.id)
                else:
                    absent.append(row.id)
                    since = row.host_absent_since
                    if since is not None and (now - since).total_seconds() >= grace_s:
                        due.append((row.id, row.owner_epoch))
            await repository.set_host_absent_since(db, present, None)
            await repository.set_host_absent_since(db, absent, now)
        ended: list[str] = []
        for session_id, epoch in due:
            row = await self.end(session_id, "host_gone", wait_for_host=False, owner_epoch=epoch)
            if row.status == "ended" and row.ended_reason == "host_gone":
                ended.append(session_id)
        return ended

    async def _is_host_linked(self, row: Session) -> bool:
        """Whether some node (this one or another) holds the link of the row's host."""
        if self.live.get(row.id) is not None or self._registry.is_online(row.rig_id):
            return True
        return await self.holder_url(row.rig_id) is not None

    async def end_sessions_the_host_lost(self, rig_id: str, open_session_ids: list[str]) -> None:
        """A host that comes back without the rig's active session (it restarted) can
        never serve it again: end it now rather than leave it billing until idle."""
        live = self.live.for_rig(rig_id)
        if live is not None and live.id not in open_session_ids:
            await self.end(live.id, "host_gone", wait_for_host=False)

    async def ended_among(self, rig_id: str, session_ids: list[str]) -> list[str]:
        """Of the sessions a reconnecting host still runs, those no longer active here."""
        live = self.live.for_rig(rig_id)
        return [sid for sid in session_ids if live is None or live.id != sid]

    # ---- helpers ----

    async def _row_for_account(self, account_id: str, session_id: str) -> Session:
        async with self._db_sessions() as db:
            row = await repository.get(db, session_id)
        if row is None or row.account_id != account_id:
            raise session_not_found()
        return row

    async def _forward_if_served_elsewhere(self, row: Session) -> None:
        """Raises `ForwardToHolder` when the row's session is active and another node
        holds its rig's link (so serves it); nothing when it is live here, over, or
        served by no node now (then the store is all there is to read or end)."""
        if row.status != "active" or self.live.get(row.id) is not None:
            return
        holder = await self.holder_url(row.rig_id)
        if holder is not None:
            raise ForwardToHolder(holder, row.rig_id)

    async def _reload(self, db: DbSession, session_id: str) -> Session:
        row = await repository.get(db, session_id)
        assert row is not None
        await db.refresh(row)
        return row

    def _event_data(self, row: Session) -> dict[str, object]:
        data: dict[str, object] = {
            "session_id": row.id,
            "rig_id": row.rig_id,
            "mode": row.mode,
            "status": row.status,
            "billed_minutes": billed_minutes(
                row.started_at, row.ended_at if row.ended_at is not None else self._clock.now()
            ),
        }
        if row.ended_reason is not None:
            data["ended_reason"] = row.ended_reason
        return data

    def _spawn(self, coroutine: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(coroutine)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def drain(self) -> None:
        """Waits for background restores (tests and shutdown)."""
        while self._background:
            with contextlib.suppress(Exception):
                await asyncio.gather(*self._background)


def _check_owner_controls(rig: Rig, request: CreateSessionIn) -> None:
    """What the rig's owner allows API sessions (the console's rig settings)."""
    if rig.app_mode_only and request.mode != "app":
        raise OwnerForbids("the rig's owner allows only app sessions (mode: app)")
    if request.record and not rig.recordings_allowed:
        raise OwnerForbids(
            "the rig's owner does not allow recordings", code="recording_not_allowed"
        )

"""Background loops and one-shot timers of the session state machine."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from rigway.gateway.sessions.live import LiveSession
from rigway.gateway.sessions.service import SessionService
from rigway.gateway.settings import GatewaySettings

logger = logging.getLogger(__name__)


class SessionTimers:
    """host_gone after a lost link, timeout for orphans at start, and the reaper."""

    def __init__(self, service: SessionService, settings: GatewaySettings) -> None:
        self._service = service
        self._settings = settings
        self._presence_timers: dict[str, asyncio.Task[None]] = {}
        self._reaper: asyncio.Task[None] | None = None
        self._sweeper: asyncio.Task[None] | None = None

    def start(self, routing_healthy: Callable[[], Awaitable[bool]] | None = None) -> None:
        """The reaper; with `routing_healthy` (several nodes), the orphan sweeper too,
        which pauses while the routing store (Redis) does not answer: every host
        would look absent then."""
        self._reaper = asyncio.create_task(self._run_reaper())
        if routing_healthy is not None:
            self._sweeper = asyncio.create_task(self._run_sweeper(routing_healthy))

    def adopt_orphans(self, sessions: list[LiveSession]) -> None:
        for live in sessions:
            self._schedule(live.rig_id, self._settings.orphan_grace_s, "timeout")

    def host_connected(self, rig_id: str) -> None:
        timer = self._presence_timers.pop(rig_id, None)
        if timer is not None:
            timer.cancel()

    def host_disconnected(self, rig_id: str) -> None:
        if self._service.live.for_rig(rig_id) is not None:
            self._schedule(rig_id, self._settings.host_gone_grace_s, "host_gone")

    def _schedule(self, rig_id: str, delay_s: float, reason: str) -> None:
        self.host_connected(rig_id)
        self._presence_timers[rig_id] = asyncio.create_task(
            self._end_after(rig_id, delay_s, reason)
        )

    async def _end_after(self, rig_id: str, delay_s: float, reason: str) -> None:
        await asyncio.sleep(delay_s)
        self._presence_timers.pop(rig_id, None)
        await self._service.end_if_host_absent(rig_id, reason)

    async def _run_sweeper(self, routing_healthy: Callable[[], Awaitable[bool]]) -> None:
        while True:
            await asyncio.sleep(self._settings.orphan_sweep_interval_s)
            if await routing_healthy():
                await _logged(self._service.sweep_orphans(self._settings.host_gone_grace_s))

    async def _run_reaper(self) -> None:
        while True:
            await asyncio.sleep(self._settings.reaper_interval_s)
            await _logged(self._service.reap())

    async def stop(self) -> None:
        tasks = [*self._presence_timers.values()]
        tasks += [task for task in (self._reaper, self._sweeper) if task is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._presence_timers.clear()


async def _logged(work: Awaitable[object]) -> None:
    # A failing reap (a store hiccup) must not kill the loop that enforces timeouts.
    try:
        await work
    except Exception:
        logger.exception("session reaper pass failed")

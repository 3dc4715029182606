"""A session's end as an event a test can await: the gateway calls its
`SessionService.on_session_ended` listeners once a session has ended (the record says
so), and a test waits for that call instead of polling the store or the API."""

from __future__ import annotations

import asyncio
import weakref

from rigway.gateway.services import Services
from rigway.gateway.sessions.service import SessionService

__all__ = ["wait_session_ended"]


class _HeardEnds:
    """The ids of the sessions one gateway has ended since this began to listen."""

    def __init__(self) -> None:
        self._ended: set[str] = set()
        self._changed = asyncio.Condition()

    async def heard(self, session_id: str) -> None:
        async with self._changed:
            self._ended.add(session_id)
            self._changed.notify_all()

    async def wait_for(self, session_id: str) -> None:
        async with self._changed:
            await self._changed.wait_for(lambda: session_id in self._ended)


# One listener per gateway, attached on first use and never removed: the gateway walks its
# listener list while it awaits each, and a removal during that walk would skip one.
_listeners: weakref.WeakKeyDictionary[SessionService, _HeardEnds] = weakref.WeakKeyDictionary()


async def wait_session_ended(services: Services, session_id: str, timeout_s: float = 10.0) -> None:
    """Until the gateway behind `services` has ended `session_id` (at once if it already
    has); TimeoutError after `timeout_s`."""
    sessions = services.sessions
    ends = _listeners.get(sessions)
    if ends is None:
        ends = _listeners[sessions] = _HeardEnds()
        sessions.on_session_ended.append(ends.heard)
    # Listening before this look: an end after it is heard. The gateway forgets a live
    # session only once its record says ended.
    if sessions.live.get(session_id) is None:
        return
    async with asyncio.timeout(timeout_s):
        await ends.wait_for(session_id)

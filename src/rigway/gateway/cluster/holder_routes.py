"""Where this node last sent each session served by another node.

A request for such a session first cost a read of the session's row (PostgreSQL) and
two Redis reads (the rig's holder, the holder's address) before it crossed to the
holder: about a millisecond on every forwarded request. The route is remembered for a
few seconds instead. A stale route never gives a wrong answer, because the holder
checks the request all over again: a session ended there answers 410, a rig it no
longer holds 421 (the edge then looks the holder up afresh). A route is forgotten when
forwarding along it does not succeed, and it serves only the account it was learnt for
(any other caller takes the full path, and gets its 404 there).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from rigway.gateway.clock import Clock

__all__ = ["ROUTE_TTL_S", "HolderRoute", "HolderRoutes"]

ROUTE_TTL_S: Final = 5.0
# Past this many routes, expired ones are dropped (and all, should none have expired).
_MAX_ROUTES: Final = 4096


@dataclass(frozen=True, slots=True)
class HolderRoute:
    account_id: str
    rig_id: str
    holder_url: str
    until: float  # the clock's monotonic seconds


class HolderRoutes:
    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._routes: dict[str, HolderRoute] = {}

    def get(self, session_id: str, account_id: str) -> HolderRoute | None:
        route = self._routes.get(session_id)
        if route is None or route.account_id != account_id:
            return None
        if route.until <= self._clock.monotonic():
            del self._routes[session_id]
            return None
        return route

    def remember(self, session_id: str, account_id: str, rig_id: str, holder_url: str) -> None:
        now = self._clock.monotonic()
        if len(self._routes) >= _MAX_ROUTES:
            self._routes = {sid: r for sid, r in self._routes.items() if r.until > now}
            if len(self._routes) >= _MAX_ROUTES:
                self._routes.clear()
        self._routes[session_id] = HolderRoute(account_id, rig_id, holder_url, now + ROUTE_TTL_S)

    def forget(self, session_id: str) -> None:
        self._routes.pop(session_id, None)

    def __len__(self) -> int:
        return len(self._routes)

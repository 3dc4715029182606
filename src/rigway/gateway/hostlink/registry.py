"""Which rigs are connected, in this process.

With Redis configured (scale-out, a later step) a backplane routes a request to the
node that holds the rig's socket; the interface stays `get(rig_id)`.
"""

from __future__ import annotations

import asyncio

from rigway.gateway.hostlink.connection import HostConnection
from rigway.protocol.messages import DisplayInfo
from rigway.protocol.ops import DesktopState

REPLACED_CLOSE_CODE = 4409


class HostRegistry:
    def __init__(self) -> None:
        self._connections: dict[str, HostConnection] = {}
        self._online_events: dict[str, asyncio.Event] = {}

    def get(self, rig_id: str) -> HostConnection | None:
        connection = self._connections.get(rig_id)
        return connection if connection is not None and connection.is_open else None

    def connected_count(self) -> int:
        return sum(1 for connection in self._connections.values() if connection.is_open)

    def is_online(self, rig_id: str) -> bool:
        return self.get(rig_id) is not None

    def desktop_state(self, rig_id: str) -> DesktopState | None:
        """The connected host's latest desktop state; None while the rig is offline."""
        connection = self.get(rig_id)
        return None if connection is None else connection.desktop_state

    def owner_active(self, rig_id: str) -> bool | None:
        """Whether the owner uses the connected rig's own input; None while offline."""
        connection = self.get(rig_id)
        return None if connection is None else connection.owner_active

    def displays(self, rig_id: str) -> list[DisplayInfo]:
        """The connected host's latest monitors; [] while offline."""
        connection = self.get(rig_id)
        return [] if connection is None else list(connection.displays)

    async def wait_online(self, rig_id: str) -> None:
        while self.get(rig_id) is None:
            await self._online_events.setdefault(rig_id, asyncio.Event()).wait()

    async def attach(self, connection: HostConnection) -> None:
        previous = self._connections.get(connection.rig_id)
        self._connections[connection.rig_id] = connection
        waiters = self._online_events.pop(connection.rig_id, None)
        if waiters is not None:
            waiters.set()
        if previous is not None and previous is not connection:
            await previous.close(code=REPLACED_CLOSE_CODE, reason="replaced")

    def detach(self, connection: HostConnection) -> bool:
        """Forget this connection; False when a newer one already replaced it."""
        if self._connections.get(connection.rig_id) is connection:
            del self._connections[connection.rig_id]
            return True
        return False

    async def disconnect(self, rig_id: str, code: int, reason: str) -> None:
        connection = self._connections.pop(rig_id, None)
        if connection is not None:
            await connection.close(code=code, reason=reason)

    async def close_all(self) -> None:
        for connection in list(self._connections.values()):
            await connection.close(code=1001, reason="gateway_stopping")
        self._connections.clear()

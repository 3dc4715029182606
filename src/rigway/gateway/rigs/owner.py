"""What a rig's owner does to it beyond reading: rename, toggle API access, set what
API sessions may do (owner controls), unpair, wake. These cross features (sessions end,
host links close), so they live here rather than in `RigService`."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from rigway.gateway.cluster.forwarding import ForwardToHolder
from rigway.gateway.errors import Conflict, HostError
from rigway.gateway.hostlink.connection import HostOpError, HostTimeoutError, HostUnavailableError
from rigway.gateway.hostlink.registry import HostRegistry
from rigway.gateway.rigs.schemas import RigOut, WakeOut
from rigway.gateway.rigs.service import OwnerControls, RigService
from rigway.gateway.sessions.service import SessionService
from rigway.protocol import ops
from rigway.wol import parse_host_port, parse_mac, send_magic_packet

logger = logging.getLogger(__name__)
UNPAIRED_CLOSE_CODE = 4401


class RigOwnerActions:
    def __init__(
        self,
        rigs: RigService,
        sessions: SessionService,
        registry: HostRegistry,
        *,
        wake_broadcast: str,
        host_timeout_s: float,
    ) -> None:
        self._rigs = rigs
        self._sessions = sessions
        self._registry = registry
        self._wake_broadcast = wake_broadcast
        self._host_timeout_s = host_timeout_s
        # Told each rig unpaired here: the node holding its link closes it.
        self.on_unpaired: Callable[[str], None] = lambda rig_id: None
        self._closing: set[asyncio.Future[None]] = set()

    async def update(
        self,
        account_id: str,
        rig_id: str,
        *,
        name: str | None,
        api_access_enabled: bool | None,
        controls: OwnerControls | None = None,
    ) -> RigOut:
        """A rig another node holds is updated there (`ForwardToHolder`): its live
        session takes a new owner-idle delay at once, and the answer shows the rig
        online. Another account's rig is 404 here first, never forwarded: a holder that
        cannot be reached would answer 503, telling the caller the rig exists."""
        if not self._registry.is_online(rig_id):
            rig = await self._rigs.get(account_id, rig_id)
            await self._rigs.forward_if_held_elsewhere(rig.id)
        rig = await self._rigs.update(
            account_id, rig_id, name=name, api_access_enabled=api_access_enabled, controls=controls
        )
        if controls is not None and controls.owner_idle_s is not None:
            await self._tell_live_session(rig.id, controls.owner_idle_s)
        return self._rigs.view(rig)

    async def _tell_live_session(self, rig_id: str, owner_idle_s: int) -> None:
        """A session running on the rig takes the owner's new delay at once. Best
        effort: the setting is stored, so a host that cannot be told (gone, or an agent
        that predates the op) has it from its next session."""
        live = self._sessions.live.for_rig(rig_id)
        connection = self._registry.get(rig_id)
        if live is None or connection is None:
            return
        body = ops.SessionOwnerIdle(session_id=live.id, owner_idle_s=owner_idle_s).model_dump()
        try:
            await connection.request(ops.SESSION_OWNER_IDLE, body, self._host_timeout_s)
        except (HostTimeoutError, HostUnavailableError, HostOpError) as exc:
            logger.info("session %s keeps its owner-idle delay until its end (%s)", live.id, exc)

    async def unpair(self, account_id: str, rig_id: str) -> RigOut:
        # Unpaired first, so no new session can start in the meantime; then the live
        # session ends while the host is still connected (its safety restore runs now).
        rig = await self._rigs.unpair(account_id, rig_id)
        live = self._sessions.live.for_rig(rig_id)
        # Served by another node, the session is still the store's to end (the holder
        # restores the rig when it hears of it).
        session_id = live.id if live is not None else await self._sessions.active_on(rig_id)
        if session_id is not None:
            await self._sessions.end(session_id, "unpaired")
        await self.disconnect_unpaired(rig_id)
        self.on_unpaired(rig_id)
        return self._rigs.view(rig)

    def note_unpaired(self, notice: dict[str, Any]) -> None:
        """Another node unpaired a rig (notice): close its link if it is here."""
        task = asyncio.ensure_future(self.disconnect_unpaired(str(notice.get("rig_id"))))
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def disconnect_unpaired(self, rig_id: str) -> None:
        """Close the rig's link, if this node holds it: its token is revoked."""
        await self._registry.disconnect(rig_id, UNPAIRED_CLOSE_CODE, "unpaired")

    async def wake(self, account_id: str, rig_id: str, *, may_forward: bool = True) -> WakeOut:
        """Wake-on-LAN through an online rig on the same LAN, else from the gateway.

        A neighbour whose link another node of the service holds is reached through
        that node (`ForwardToHolder`: the whole request runs there) once none linked
        here could send it; `may_forward` is False for a request forwarded already,
        which tries only the neighbours linked to the node it reached."""
        rig = await self._rigs.get(account_id, rig_id)
        if self._registry.is_online(rig.id) or await self._rigs.held_elsewhere([rig.id]):
            return WakeOut(ok=True, rig_id=rig.id, already_online=True)
        if rig.mac is None:
            raise Conflict("no MAC address is known for this rig", code="wake_unavailable")
        try:
            mac = parse_mac(rig.mac)
        except ValueError as exc:
            raise Conflict("the rig's MAC address is unusable", code="wake_unavailable") from exc
        neighbours = await self._rigs.lan_neighbours(rig)
        for neighbour in neighbours:
            if await self._wake_through(neighbour.id, rig.mac):
                return WakeOut(ok=True, rig_id=rig.id, via=neighbour.id)
        if may_forward:
            for neighbour in neighbours:
                if self._registry.is_online(neighbour.id):
                    continue  # linked here, and tried above
                holder = await self._rigs.holder_url(neighbour.id)
                if holder is not None:
                    raise ForwardToHolder(holder, neighbour.id)
        host, port = parse_host_port(self._wake_broadcast)
        try:
            await send_magic_packet(mac, host, port)
        except OSError as exc:
            raise HostError(f"the gateway could not send the wake packet ({exc})") from exc
        return WakeOut(ok=True, rig_id=rig.id, via="gateway")

    async def _wake_through(self, neighbour_id: str, mac: str) -> bool:
        connection = self._registry.get(neighbour_id)
        if connection is None:
            return False
        host, port = parse_host_port(self._wake_broadcast)
        body = ops.WakeSend(mac=mac.lower(), broadcast=host, port=port).model_dump()
        try:
            await connection.request(ops.WAKE_SEND, body, self._host_timeout_s)
        except (HostTimeoutError, HostUnavailableError, HostOpError) as exc:
            logger.info("wake through %s failed (%s); trying the next way", neighbour_id, exc)
            return False
        return True

"""`TakeoverService`: who drives a live session's input, the API caller or a person.

A takeover is a one-time token (the stream's viewer-token machinery, with a key of its
own, so a viewer link can never take control nor a takeover link pass for a viewer's)
and then one signaling socket (`TakeoverChannel`): the person's page. Admission claims
the session at once, synchronously (no await between the check and the claim, as for
stream viewers), so two people can never both hold it; control passes to the person
when the socket's offer is answered (`grant`) and returns to the API when they hand it
back, when their socket closes or goes silent, or when the session ends (`release`).
What the person still holds down is released first, through the same input path.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Protocol

from rigway.gateway.clock import Clock
from rigway.gateway.desktop.service import DesktopService
from rigway.gateway.errors import ApiError, human_in_control
from rigway.gateway.sessions.live import LiveSession
from rigway.gateway.sessions.service import SessionService
from rigway.gateway.settings import GatewaySettings
from rigway.gateway.stream.service import (
    MAX_VIEWERS_PER_SESSION,
    Refused,
    StreamService,
    redeem_token,
    refuse_video_of_an_app_session,
    websocket_url,
)
from rigway.gateway.stream.tokens import ViewerTokens
from rigway.gateway.takeover.events import HeldInput
from rigway.gateway.takeover.schemas import TakeoverOut
from rigway.protocol import ops

__all__ = ["HEARTBEAT_TIMEOUT_S", "RELEASE_TIMEOUT_S", "TakeoverHolder", "TakeoverService"]

logger = logging.getLogger(__name__)

# The page says something (at least a ping) every second: a socket silent this long is
# a page gone without a close (a dead network), and control returns to the API.
HEARTBEAT_TIMEOUT_S = 3.0
# Releasing what a person held is a tiny batch; a host too slow for it must not hold
# control away from the API (its own safety releases when the session ends).
RELEASE_TIMEOUT_S = 1.0


class TakeoverHolder(Protocol):
    """What the service needs of the channel that holds (or claims) a session."""

    session_id: str
    viewer_id: str
    held: HeldInput

    async def hand_back(self, reason: str) -> None:
        """Release what the person holds, return control, say so and close."""
        ...

    async def end(self, reason: str) -> None:
        """Say `bye` and close (the session ended or the gateway stops)."""
        ...


class TakeoverService:
    def __init__(
        self,
        sessions: SessionService,
        desktop: DesktopService,
        stream: StreamService,
        settings: GatewaySettings,
        clock: Clock,
        tokens: ViewerTokens | None = None,
        heartbeat_timeout_s: float = HEARTBEAT_TIMEOUT_S,
    ) -> None:
        self._sessions = sessions
        self._live = sessions.live
        self._desktop = desktop
        self.stream = stream
        self._settings = settings
        self.tokens = tokens if tokens is not None else ViewerTokens(clock.now)
        self.heartbeat_timeout_s = heartbeat_timeout_s
        # Session id → the channel that claimed it (control is "human" once granted).
        self._holders: dict[str, TakeoverHolder] = {}
        self._changed = asyncio.Condition()

    # ---- credentials -----------------------------------------------------------------

    def credentials(self, live: LiveSession, http_base: str) -> TakeoverOut:
        """A one-time takeover link; 409 human_in_control while a person holds (or is
        taking) control. `http_base`: the gateway's public base URL, no trailing /."""
        refuse_video_of_an_app_session(live)
        if self.is_claimed(live.id):
            raise human_in_control()
        issued = self.tokens.issue(live.id, live.rig_id)
        return TakeoverOut(
            connect_url=f"{signaling_url_for(http_base)}?token={issued.token}",
            viewer_url=f"{http_base}/v1/takeover/view?token={issued.token}",
            expires_at=issued.claims.expires_at,
        )

    def is_claimed(self, session_id: str) -> bool:
        live = self._live.get(session_id)
        return session_id in self._holders or (live is not None and live.control == "human")

    # ---- the person's socket ---------------------------------------------------------

    async def admit(
        self, token: str | None, session_hint: str | None, *, relayed: bool = False
    ) -> LiveSession:
        """Consume the token and return its live session, or raise `Refused` (or
        `RelayToHolder`: the node holding the session's rig decides, there). No await
        after the checks: the caller claims right after (`claim`), with none between."""
        live = await redeem_token(
            self.tokens,
            self._live,
            token,
            session_hint,
            holder_url_of=self.stream.holder_url_of,
            relayed=relayed,
        )
        if self.is_claimed(live.id):
            raise Refused("human_in_control")
        if self.stream.viewer_count(live.id) >= MAX_VIEWERS_PER_SESSION:
            raise Refused("too_many_viewers")
        return live

    def claim(self, holder: TakeoverHolder) -> None:
        """The admitted channel holds the session (its viewers include it, so a session
        end says bye to it as to every viewer)."""
        self._holders[holder.session_id] = holder
        self.stream.register(holder)

    def holds(self, holder: TakeoverHolder) -> bool:
        return self._holders.get(holder.session_id) is holder

    async def grant(self, holder: TakeoverHolder) -> bool:
        """The offer was answered: control passes to the person (False: too late, the
        session ended or the claim was let go)."""
        live = self._live.get(holder.session_id)
        if live is None or not self.holds(holder):
            return False
        live.control = "human"
        logger.info("session %s: a person took control (%s)", live.id, holder.viewer_id)
        await self._notify()
        return True

    def heard_from(self, holder: TakeoverHolder) -> None:
        """The person's page spoke: while they hold control the session is in use, not
        idle (the API caller may only watch meanwhile)."""
        live = self._live.get(holder.session_id)
        if live is not None and self.holds(holder) and live.control == "human":
            self._sessions.record_activity(live)

    async def run_input(self, holder: TakeoverHolder, events: list[ops.InputEvent]) -> None:
        """The person's events, through the API's own input path (the host's safety and
        held-input tracking apply), allowed only for the holder in control."""
        live = self._live.get(holder.session_id)
        if live is None or not self.holds(holder) or live.control != "human":
            raise human_in_control()
        for event in events:
            holder.held.note(event)
        await self._run(live, events, self._settings.host_timeout_s)

    async def release(self, holder: TakeoverHolder) -> bool:
        """Control back to the API, after releasing what the person holds; False when
        `holder` held nothing (released already, or never claimed)."""
        if not self.holds(holder):
            return False
        live = self._live.get(holder.session_id)
        releases = holder.held.take_releases()
        if live is not None and releases and live.control == "human":
            try:
                await self._run(live, releases, RELEASE_TIMEOUT_S)
            except ApiError as exc:
                # The host is gone or the session ended: its own safety releases then.
                logger.info("session %s: releasing held input failed: %s", live.id, exc)
        if self._holders.get(holder.session_id) is holder:
            del self._holders[holder.session_id]
        if live is not None and live.control == "human":
            live.control = "api"
            logger.info("session %s: control back to the API", live.id)
        await self._notify()
        return True

    async def hand_back(self, session_id: str) -> bool:
        """The owner's console hands a person's control back: False when no one holds it."""
        holder = self._holders.get(session_id)
        if holder is None:
            return False
        await holder.hand_back("owner_hand_back")
        return True

    async def on_session_ended(self, session_id: str) -> None:
        """A `SessionService.on_session_ended` listener: the stream's listener closes the
        socket (it is one of the session's viewers); the claim goes at once."""
        self._holders.pop(session_id, None)
        await self._notify()

    async def wait_for_control(self, session_id: str, control: str) -> None:
        """Until the live session's control is `control` (or it is gone): for callers
        that must see a change land, bounded by their own timeout."""
        async with self._changed:
            await self._changed.wait_for(lambda: self._control_of(session_id) in (control, None))

    def _control_of(self, session_id: str) -> str | None:
        live = self._live.get(session_id)
        return None if live is None else live.control

    async def _run(self, live: LiveSession, events: list[ops.InputEvent], timeout_s: float) -> None:
        body = ops.InputBatch(session_id=live.id, events=events).model_dump(
            exclude_defaults=True, exclude={"session_id"}
        )
        await self._desktop.input(
            live, body, events=len(events), timeout_s=timeout_s, by_human=True
        )

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()


def signaling_url_for(http_base: str) -> str:
    """`https://gw.example` → `wss://gw.example/v1/takeover/signal`."""
    return websocket_url(http_base, "/v1/takeover/signal")

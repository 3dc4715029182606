"""`StreamService`: viewer credentials, admission of signaling sockets, and the live
viewers of each session (so a session end can say `bye` to every one of them).

Admission and registration happen in one synchronous step (no await between the
liveness check and the registration), so a viewer can never slip in after its
session's end listener ran.

With several nodes a viewer's socket may reach a node that does not hold the session's
rig: admission then names the node that does (`RelayToHolder`) without using the token
up, and the route relays the socket to that node's same endpoint, where the token is
used (once across nodes) and the viewer served as if it had come there.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Coroutine
from datetime import datetime
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

from rigway.gateway.clock import Clock
from rigway.gateway.cluster.ownership import HolderUrlOf, held_by_no_other_node
from rigway.gateway.errors import Conflict
from rigway.gateway.hostlink.registry import HostRegistry
from rigway.gateway.sessions.live import LiveSession, LiveSessions
from rigway.gateway.settings import GatewaySettings
from rigway.gateway.stream.tokens import IssuedToken, TokenRejectedError, ViewerTokens
from rigway.protocol import ops

__all__ = [
    "CLOSE_CODES",
    "MAX_VIEWERS_PER_SESSION",
    "Refused",
    "RelayToHolder",
    "StreamCredentialsOut",
    "StreamService",
    "ViewerHandle",
    "redeem_token",
    "websocket_url",
]

logger = logging.getLogger(__name__)

# The agent bounds its own viewers too (one encoder each); this keeps one session
# from taking all of them.
MAX_VIEWERS_PER_SESSION = 4
# WebSocket close codes of the signaling socket, by reason (docs/stream.md).
CLOSE_CODES: dict[str, int] = {
    "invalid_token": 4401,
    "token_expired": 4401,
    "token_used": 4403,
    "token_session_mismatch": 4403,
    "session_ended": 4410,
    "too_many_viewers": 4429,
    # A takeover socket while a person holds (or is taking) the session's control.
    "human_in_control": 4409,
    "bad_message": 4400,
    "offer_refused": 4415,
    "host_error": 4502,
    "rig_offline": 4503,
    "host_timeout": 4504,
    # A node in the way did not answer (the token store, the node holding the rig): the
    # token is not used up, so the same link may try again.
    "unavailable": 1013,
}


class Refused(Exception):
    """A signaling socket the gateway will not serve: close with `code` and `reason`."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.code = CLOSE_CODES[reason]


class RelayToHolder(Exception):
    """The socket's session is live on the node at `node_url`, which holds its rig."""

    def __init__(self, node_url: str) -> None:
        super().__init__(node_url)
        self.node_url = node_url


async def redeem_token(
    tokens: ViewerTokens,
    live: LiveSessions,
    token: str | None,
    session_hint: str | None,
    *,
    holder_url_of: HolderUrlOf = held_by_no_other_node,
    relayed: bool = False,
) -> LiveSession:
    """Use up a one-time link's token and return the live session it names, or raise
    `Refused`: a missing, expired or used token, another session's id beside it, or a
    session that ended (or moved to another rig) since the token was issued.

    A valid token of a session not live here whose rig another node holds raises
    `RelayToHolder` instead, unused: that node uses it. A socket relayed here already
    (`relayed`) is never relayed again: if its rig moved on to yet another node, it is
    refused `unavailable` with the token unused, so the viewer's retry reaches the new
    holder with a link still good. Returns with no await after the liveness check, so
    the caller registers the socket in the same step."""
    if not token:
        raise Refused("invalid_token")
    try:
        claims = tokens.verify(token)
    except TokenRejectedError as exc:
        raise Refused(exc.reason) from exc
    if _live_session(live, claims.session_id, claims.rig_id) is None:
        holder = await holder_url_of(claims.rig_id)
        if holder is not None:
            if relayed:
                # A second hop could bounce between nodes while the rig moves; the
                # relaying node looks the holder up afresh on the viewer's retry.
                raise Refused("unavailable")
            raise RelayToHolder(holder)
    try:
        claims = await tokens.use_once(token)
    except TokenRejectedError as exc:
        raise Refused(exc.reason) from exc
    if session_hint is not None and session_hint != claims.session_id:
        raise Refused("token_session_mismatch")
    session = _live_session(live, claims.session_id, claims.rig_id)
    if session is None:
        raise Refused("session_ended")
    return session


def _live_session(live: LiveSessions, session_id: str, rig_id: str) -> LiveSession | None:
    session = live.get(session_id)
    return session if session is not None and session.rig_id == rig_id else None


class StreamCredentialsOut(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "signaling_url": "wss://rigway.example.com/v1/stream/signal",
                    "viewer_token": "eyJhbGciOiJFZERTQSJ9…",
                    "rig_id": "rig_5d2c9e71a0b4c3d2e1f00a9b",
                    "session_id": "ses_0f3c6a2b9d1e4f5a6b7c8d9e",
                    "connect_url": "wss://rigway.example.com/v1/stream/signal?token=eyJ…",
                    "viewer_url": "https://rigway.example.com/v1/stream/view?token=eyJ…",
                    "expires_at": "2026-11-25T22:00:00Z",
                    "ice_servers": [],
                }
            ]
        }
    )
    signaling_url: str = Field(
        description="The signaling WebSocket, `ws(s)://<host>/v1/stream/signal`."
    )
    viewer_token: str = Field(description="A viewer token (JWT), valid 1 hour.")
    rig_id: str = Field(description="The rig streamed.")
    session_id: str = Field(description="The session it belongs to.")
    connect_url: str = Field(
        description="`signaling_url?token=<viewer_token>`: good for one connection."
    )
    viewer_url: str = Field(
        description="The gateway's own viewer page for this token: open it in a browser."
    )
    expires_at: datetime = Field(description="When the token expires.")
    ice_servers: list[ops.IceServer] = Field(
        description="STUN/TURN servers to use (empty by default: nothing external is contacted)."
    )


class ViewerHandle(Protocol):
    """What the service needs of a live signaling channel."""

    session_id: str
    viewer_id: str

    async def end(self, reason: str) -> None:
        """Say `bye` and close the socket (bounded in time)."""
        ...


class StreamService:
    def __init__(
        self,
        live: LiveSessions,
        registry: HostRegistry,
        settings: GatewaySettings,
        clock: Clock,
        tokens: ViewerTokens | None = None,
        holder_url_of: HolderUrlOf = held_by_no_other_node,
    ) -> None:
        """`holder_url_of`: the address of the other node holding a rig, if one does."""
        self._live = live
        self.registry = registry
        self.settings = settings
        self.tokens = tokens if tokens is not None else ViewerTokens(clock.now)
        self.holder_url_of = holder_url_of
        self._viewers: dict[str, dict[str, ViewerHandle]] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    # ---- credentials -----------------------------------------------------------------

    def issue(self, live: LiveSession) -> IssuedToken:
        refuse_video_of_an_app_session(live)
        return self.tokens.issue(live.id, live.rig_id)

    def credentials(self, live: LiveSession, http_base: str) -> StreamCredentialsOut:
        """`http_base`: the gateway's public http(s) base URL, without a trailing /."""
        issued = self.issue(live)
        signaling_url = signaling_url_for(http_base)
        return StreamCredentialsOut(
            signaling_url=signaling_url,
            viewer_token=issued.token,
            rig_id=live.rig_id,
            session_id=live.id,
            connect_url=f"{signaling_url}?token={issued.token}",
            viewer_url=f"{http_base}/v1/stream/view?token={issued.token}",
            expires_at=issued.claims.expires_at,
            ice_servers=list(self.settings.stream_ice_servers),
        )

    # ---- admission -------------------------------------------------------------------

    async def admit(
        self, token: str | None, session_hint: str | None, *, relayed: bool = False
    ) -> LiveSession:
        """Consume the token and return its live session, or raise `Refused` (or
        `RelayToHolder`: see `redeem_token`).

        No await after the checks: the caller registers the viewer right after, with
        none in between either (see the module docstring)."""
        live = await redeem_token(
            self.tokens,
            self._live,
            token,
            session_hint,
            holder_url_of=self.holder_url_of,
            relayed=relayed,
        )
        if len(self._viewers.get(live.id, {})) >= MAX_VIEWERS_PER_SESSION:
            raise Refused("too_many_viewers")
        return live

    def register(self, viewer: ViewerHandle) -> None:
        self._viewers.setdefault(viewer.session_id, {})[viewer.viewer_id] = viewer

    def unregister(self, viewer: ViewerHandle) -> None:
        viewers = self._viewers.get(viewer.session_id, {})
        if viewers.get(viewer.viewer_id) is viewer:
            del viewers[viewer.viewer_id]
        if not viewers:
            self._viewers.pop(viewer.session_id, None)

    def viewer_count(self, session_id: str) -> int:
        return len(self._viewers.get(session_id, {}))

    # ---- ends ------------------------------------------------------------------------

    async def on_session_ended(self, session_id: str) -> None:
        """A `SessionService.on_session_ended` listener: `bye` to every viewer. In the
        background, so ending a session never waits on a slow viewer's socket."""
        for viewer in self._viewers.pop(session_id, {}).values():
            self._spawn(viewer.end("session_ended"))

    async def close_all(self) -> None:
        """Gateway shutdown: close every viewer, wait for the goodbyes in flight."""
        for viewers in list(self._viewers.values()):
            for viewer in list(viewers.values()):
                self._spawn(viewer.end("gateway_stopping"))
        self._viewers.clear()
        while self._tasks:
            with contextlib.suppress(Exception):
                await asyncio.gather(*self._tasks)
        await self.tokens.close()

    def _spawn(self, coroutine: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


def signaling_url_for(http_base: str) -> str:
    """`https://gw.example` → `wss://gw.example/v1/stream/signal`."""
    return websocket_url(http_base, "/v1/stream/signal")


def websocket_url(http_base: str, path: str) -> str:
    """`https://gw.example`, `/p` → `wss://gw.example/p` (http → ws)."""
    scheme, sep, rest = http_base.partition("://")
    ws_scheme = {"https": "wss", "http": "ws"}.get(scheme.lower(), scheme)
    return f"{ws_scheme}{sep}{rest}{path}"


def refuse_video_of_an_app_session(live: LiveSession) -> None:
    """Live video shows the whole desktop, which an app session must never see (the
    host refuses it too): a 409 now rather than a link whose socket would fail."""
    if live.mode == "app":
        raise Conflict(
            "live video (and so take control) shows the whole desktop: not in an app session",
            code="app_session",
        )

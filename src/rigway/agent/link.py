"""The agent's end of the host link: one outbound WebSocket, kept up (docs/protocol.md).

Errors `run()` stops on (retrying could never help):

    LinkFatalError
      LinkAuthError       4401 or HTTP 401/403: the rig token is bad or revoked
      LinkProtocolError   4400: the gateway does not speak this protocol version
      LinkReplacedError   4409: another agent connected with this rig's token
      LinkConfigError     the gateway URL is not a WebSocket URL

`request()` raises `LinkUnavailableError` when there is no link (or it dropped), and
`GatewayOpError` when the gateway answered `ok: false`.

Everything else (refused connections, drops, timeouts, garbage) is retried with
exponential backoff and jitter. Each request from the gateway runs in a task of its
own, so the legs of an observe run concurrently; input batches and app ops of one
session go through an ordered lane so they run in arrival order. With a
`DesktopStateReporter` the hello carries the desktop's state and each change after it
goes as a `desktop/state` note while connected; with a `DisplaysReporter`, likewise the
monitors (`hello.displays`, then `desktop/displays` notes).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import random
import time
from collections.abc import AsyncIterator, Awaitable, Coroutine, Sequence
from functools import partial
from typing import Any, Final

from pydantic import ValidationError
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus, InvalidURI

from rigway.agent.desktop_state import DesktopStateReporter
from rigway.agent.dispatch import ORDERED_OPS, Dispatcher, HostOpError
from rigway.agent.dispatch import Reply as OpReply
from rigway.agent.displays import DisplaysReporter
from rigway.agent.owner_presence import OwnerPresenceReporter
from rigway.protocol import ops
from rigway.protocol.displays import DESKTOP_DISPLAYS, DisplayInfo, DisplaysNote
from rigway.protocol.framing import FramingError, decode_frame, encode_binary, encode_text
from rigway.protocol.messages import Hello, Note, Ping, Pong, Reply, Request, Welcome

__all__ = [
    "AgentLink",
    "GatewayOpError",
    "LinkAuthError",
    "LinkConfigError",
    "LinkFatalError",
    "LinkProtocolError",
    "LinkReplacedError",
    "LinkUnavailableError",
    "backoff_delay_s",
]

_log = logging.getLogger(__name__)

CLOSE_BAD_TOKEN: Final = 4401
CLOSE_PROTOCOL_UNSUPPORTED: Final = 4400
CLOSE_REPLACED: Final = 4409
# JPEGs of large desktops at q100 run to several MiB; the cap only guards against a
# runaway peer.
MAX_FRAME_BYTES: Final = 64 * 1024 * 1024
# A peer silent for this many heartbeat intervals is presumed dead.
SILENT_INTERVALS: Final = 3
# websockets' close() first waits for the write buffer to drain below its high-water
# mark and only then starts counting close_timeout; the library has no public way to
# drop a socket sooner. With the mark above anything the link ever buffers, close()
# gives up on a gateway that stopped reading after close_timeout, not when TCP does
# (many minutes). Sends then never wait for the gateway to read: what they buffer is
# the replies to the gateway's own requests, which would otherwise wait in tasks.
# 2 GiB - 1: the largest mark uvloop's transports take (a C int).
WRITE_BUFFER_HIGH_WATER: Final = (1 << 31) - 1
# Bounds the closing handshake, a dead gateway's included.
CLOSE_TIMEOUT_S: Final = 2.0


class LinkFatalError(Exception):
    """The link stopped for a reason retrying cannot fix."""


class LinkAuthError(LinkFatalError):
    pass


class LinkProtocolError(LinkFatalError):
    pass


class LinkReplacedError(LinkFatalError):
    pass


class LinkConfigError(LinkFatalError):
    pass


class LinkUnavailableError(ConnectionError):
    """No link to the gateway right now."""


class GatewayOpError(Exception):
    def __init__(self, code: str, detail: str) -> None:
        super().__init__(f"{code}: {detail}" if detail else code)
        self.code = code
        self.detail = detail


class _HandshakeError(Exception):
    """The gateway did not answer hello with a welcome (retried)."""


def backoff_delay_s(attempt: int, initial_s: float, max_s: float, rng: random.Random) -> float:
    """Delay before reconnect `attempt` (0-based): doubling from `initial_s` up to `max_s`,
    with "equal jitter" (half fixed, half random) so a gateway restart is not met by
    every rig at the same instant, yet no rig retries in a tight loop."""
    ceiling = min(max_s, initial_s * 2.0 ** min(attempt, 32))
    return ceiling / 2 + rng.uniform(0.0, ceiling / 2)


class _Responder:
    """Answers one gateway request from the thread that has the answer.

    The screen worker calls `answer` right after an encode. The reply message is joined
    there, off the loop, and the loop sends it from one callback, instead of waking
    the request's task and the coroutines it awaits
    (docs/decisions/0008-replies-from-the-screen-worker.md)."""

    __slots__ = ("_link", "_loop", "_request_id", "_ws", "answered")

    def __init__(
        self,
        link: AgentLink,
        loop: asyncio.AbstractEventLoop,
        ws: ClientConnection,
        request_id: str,
    ) -> None:
        self._link = link
        self._loop = loop
        self._ws = ws
        self._request_id = request_id
        self.answered = False

    def answer(self, body: dict[str, Any], payload: bytes) -> None:
        message = {"t": "res", "id": self._request_id, "ok": True, "body": body}
        data = encode_binary(message, payload)
        self.answered = True
        # A loop that closed meanwhile has nobody left to answer.
        with contextlib.suppress(RuntimeError):
            self._loop.call_soon_threadsafe(self._link._send_answer, self._ws, data)


class _Lanes:
    """One FIFO lock per session id, dropped when nobody uses it."""

    def __init__(self) -> None:
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}

    @contextlib.asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[None]:
        lock, users = self._locks.get(key, (asyncio.Lock(), 0))
        self._locks[key] = (lock, users + 1)
        try:
            # asyncio.Lock wakes waiters in the order they queued: arrival order.
            async with lock:
                yield
        finally:
            lock, users = self._locks[key]
            if users == 1:
                del self._locks[key]
            else:
                self._locks[key] = (lock, users - 1)


class AgentLink:
    def __init__(
        self,
        url: str | Sequence[str],
        rig_token: str,
        hello: Hello,
        dispatcher: Dispatcher,
        *,
        heartbeat_interval_s: float = 5.0,
        session_grace_s: float = 10.0,
        backoff_initial_s: float = 0.5,
        backoff_max_s: float = 30.0,
        open_timeout_s: float = 10.0,
        max_frame_bytes: int = MAX_FRAME_BYTES,
        rng: random.Random | None = None,
        desktop_states: DesktopStateReporter | None = None,
        displays: DisplaysReporter | None = None,
        owner_presence: OwnerPresenceReporter | None = None,
    ) -> None:
        """`url` is the full `ws(s)://…/v1/agent/connect` address, or several: the nodes
        of one service, tried in turn (the next one after a failed dial or a dropped
        link, the same one while it serves). The gateway's
        `welcome.heartbeat_interval_s` replaces `heartbeat_interval_s` once connected.
        `desktop_states`: None sends no desktop state (the gateway shows "unknown").
        `displays`: None sends the hello's displays as given, and no change after.
        `owner_presence`: None sends no owner presence (the gateway shows "not active")."""
        self._urls = [url] if isinstance(url, str) else list(url)
        if not self._urls:
            raise ValueError("no gateway URL")
        self._url_index = 0
        self._rig_token = rig_token
        self._hello = hello
        self._dispatcher = dispatcher
        self._heartbeat_interval_s = heartbeat_interval_s
        self._session_grace_s = session_grace_s
        self._backoff = (backoff_initial_s, backoff_max_s)
        self._open_timeout_s = open_timeout_s
        self._max_frame_bytes = max_frame_bytes
        self._rng = rng if rng is not None else random.Random()  # noqa: S311 (jitter only)
        self._desktop_states = desktop_states
        self._displays = displays
        self._owner_presence = owner_presence
        self._stopping = asyncio.Event()
        self._connected = asyncio.Event()
        self._ws: ClientConnection | None = None
        self._lanes = _Lanes()
        self._request_ids = itertools.count(1)
        self._pending: dict[str, asyncio.Future[Reply]] = {}
        self._connection_tasks: set[asyncio.Task[None]] = set()
        # The monitors this connection's hello told; what later changes compare with.
        self._sent_displays: list[DisplayInfo] = list(hello.displays)
        self._background: set[asyncio.Task[Any]] = set()
        self._grace_task: asyncio.Task[None] | None = None
        self._last_heard = 0.0
        self.rig_id: str | None = None
        self.connection_count = 0

    @property
    def _url(self) -> str:
        return self._urls[self._url_index]

    @property
    def is_connected(self) -> bool:
        return self._connected.is_set()

    @property
    def active_session_id(self) -> str | None:
        """The session this rig serves now, if any (what the owner's tray shows)."""
        return self._dispatcher.active_session_id

    async def wait_connected(self) -> None:
        """Until the next (or current) welcome; wrap in asyncio.timeout."""
        await self._connected.wait()

    async def run(self) -> None:
        """Connect, serve and reconnect until `stop()`; raises LinkFatalError.

        Runs once: after `stop()` a link does not start again (build a new one)."""
        attempt = 0
        try:
            while not self._stopping.is_set():
                count_before = self.connection_count
                try:
                    await self._connect_once()
                except LinkFatalError:
                    raise
                except Exception as exc:
                    _log.warning("host link to %s failed: %s", self._url, _describe(exc))
                if self._stopping.is_set():
                    break
                attempt = 0 if self.connection_count > count_before else attempt + 1
                # The next node: this one failed or dropped the link (a node stopping
                # closes it with 1012). With one URL, the same one again.
                self._url_index = (self._url_index + 1) % len(self._urls)
                # Backoff grows per round of every node failing, not per node.
                round_attempt = attempt // len(self._urls) if attempt else 0
                delay_s = backoff_delay_s(round_attempt, *self._backoff, self._rng)
                _log.info("reconnecting in %.1f s", delay_s)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stopping.wait(), delay_s)
        finally:
            self._cancel_grace()
            # Restores started by a welcome or a drop finish before run() returns.
            if self._background:
                await asyncio.gather(*self._background, return_exceptions=True)

    async def end_local_session(self, reason: str) -> bool:
        """End the rig's session here, without the gateway (the owner's kill while the
        link is down); True when one was running."""
        return await self._dispatcher.end_local_session(reason)

    async def stop(self) -> None:
        """Close the link and stop reconnecting; `run()` returns soon after."""
        self._stopping.set()
        ws = self._ws
        if ws is not None:
            await ws.close(1000, "agent stopping")

    async def request(self, op: str, body: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        """Ask the gateway (e.g. `session/owner_kill`); the reply body on success."""
        ws = self._ws
        if ws is None or not self._connected.is_set():
            raise LinkUnavailableError("not connected to the gateway")
        request_id = f"a{next(self._request_ids)}"
        reply_future: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = reply_future
        message = Request(
            id=request_id, op=op, deadline_ms=max(1, round(timeout_s * 1000)), body=body
        )
        try:
            await self._send(ws, message.model_dump())
            reply = await asyncio.wait_for(reply_future, timeout_s)
        except ConnectionClosed as exc:
            raise LinkUnavailableError("the link dropped") from exc
        finally:
            self._pending.pop(request_id, None)
        if not reply.ok:
            error = reply.error
            raise GatewayOpError(
                "unknown" if error is None else error.code, "" if error is None else error.detail
            )
        return dict(reply.body)

    # ---- one connection -------------------------------------------------------------

    async def _connect_once(self) -> None:
        try:
            async with connect(
                self._url,
                additional_headers={"Authorization": f"Bearer {self._rig_token}"},
                # Per-message deflate costs ~27 ms per JPEG for nothing (bench/ws_compression.py).
                compression=None,
                max_size=self._max_frame_bytes,
                open_timeout=self._open_timeout_s,
                # Liveness is the protocol's own ping/pong, which both sides count.
                ping_interval=None,
                close_timeout=CLOSE_TIMEOUT_S,
                write_limit=WRITE_BUFFER_HIGH_WATER,
                user_agent_header=f"rigway-agent/{self._hello.agent_version}",
            ) as ws:
                await self._serve_connection(ws)
        except InvalidStatus as exc:
            if exc.response.status_code in (401, 403):
                raise LinkAuthError(
                    f"the gateway refused the rig token (HTTP {exc.response.status_code}); "
                    "pair this rig again"
                ) from exc
            raise
        except InvalidURI as exc:
            raise LinkConfigError(f"gateway URL {self._url!r} is not a WebSocket URL") from exc

    async def _serve_connection(self, ws: ClientConnection) -> None:
        if self._stopping.is_set():
            # stop() ran while we were dialling, before it could see this socket.
            return
        self._ws = ws
        welcomed = gateway_silent = False
        try:
            state = None if self._desktop_states is None else await self._desktop_states.sample()
            welcome = await self._handshake(ws, state)
            welcomed = True
            self._on_welcome(welcome)
            gateway_silent = await self._serve(ws, state)
        except ConnectionClosed:
            pass
        finally:
            self._ws = None
            self._connected.clear()
            if welcomed:
                self._on_drop()
        if gateway_silent:
            # After the drop is handled: a dead peer never answers the close, and
            # close() waits CLOSE_TIMEOUT_S for it before it drops the socket.
            await ws.close(1011, "gateway silent")
        _raise_if_fatal(ws.close_code, ws.close_reason)

    async def _handshake(
        self, ws: ClientConnection, desktop_state: ops.DesktopState | None
    ) -> Welcome:
        session_id = self._dispatcher.active_session_id
        update: dict[str, object] = {
            "open_session_ids": [] if session_id is None else [session_id],
            "desktop_state": desktop_state,
        }
        if self._displays is not None:
            # Read afresh for each connection: they may have changed while it was down.
            update["displays"] = await self._displays.sample()
        hello = self._hello.model_copy(update=update)
        self._sent_displays = list(hello.displays)
        await ws.send(encode_text(hello.model_dump()))
        # A gateway that answers with something else is told why in the close code, as
        # after the handshake: 1007 for what cannot be read, 1002 for the wrong message.
        # (Text that is not UTF-8 websockets itself closes with 1007.)
        try:
            async with asyncio.timeout(self._open_timeout_s):
                header, _ = decode_frame(await ws.recv())
            if header.get("t") != "welcome":
                await ws.close(1002, "expected welcome")
                raise _HandshakeError(f"expected welcome, got {header.get('t')!r}")
            return Welcome.model_validate(header)
        except (FramingError, ValidationError) as exc:
            await ws.close(1007, "undecodable welcome")
            raise _HandshakeError(f"undecodable welcome: {exc}") from exc

    def _on_welcome(self, welcome: Welcome) -> None:
        self.rig_id = welcome.rig_id
        if welcome.heartbeat_interval_s > 0:
            self._heartbeat_interval_s = welcome.heartbeat_interval_s
        self._cancel_grace()
        for session_id in welcome.ended_session_ids:
            self._spawn_background(
                self._dispatcher.end_local_session("ended_while_disconnected", session_id)
            )
        self.connection_count += 1
        self._connected.set()
        _log.info("host link up: rig %s", welcome.rig_id)

    async def _serve(self, ws: ClientConnection, desktop_state: ops.DesktopState | None) -> bool:
        """Until the connection ends (False) or the gateway falls silent (True)."""
        loop = asyncio.get_running_loop()
        self._last_heard = loop.time()
        reader = asyncio.create_task(self._read(ws))
        heartbeat = asyncio.create_task(self._heartbeat(ws))
        if self._desktop_states is not None and desktop_state is not None:
            report = partial(self._note_desktop_state, ws)
            self._spawn_for_connection(self._desktop_states.report_changes(desktop_state, report))
        if self._displays is not None:
            note = partial(self._note_displays, ws)
            self._spawn_for_connection(self._displays.report_changes(self._sent_displays, note))
        if self._owner_presence is not None:
            # Each connection starts "not active" on the gateway's side.
            presence = partial(self._note_owner_presence, ws)
            self._spawn_for_connection(self._owner_presence.report_changes(False, presence))
        try:
            done, _ = await asyncio.wait((reader, heartbeat), return_when=asyncio.FIRST_COMPLETED)
            return heartbeat in done
        finally:
            tasks = [reader, heartbeat, *self._connection_tasks]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            for future in self._pending.values():
                if not future.done():
                    future.set_exception(LinkUnavailableError("the link dropped"))

    def _on_drop(self) -> None:
        _log.warning("host link down; held input released")
        try:
            released = self._dispatcher.on_link_lost()
        except RuntimeError:
            _log.exception("could not release held input after the link dropped")
        else:
            self._spawn_background(released)
        # On every drop, not only with a session active: a session/start still running
        # makes one active a moment later, and it must not outlive the link either.
        if self._grace_task is None:
            self._grace_task = asyncio.create_task(self._end_after_grace())

    async def _end_after_grace(self) -> None:
        await asyncio.sleep(self._session_grace_s)
        self._grace_task = None
        # Waits for a start in progress (the lifecycle lock), then ends what it started.
        if await self._dispatcher.end_local_session("link_lost"):
            _log.warning(
                "host link still down after %.0f s: ended the local session",
                self._session_grace_s,
            )

    def _cancel_grace(self) -> None:
        if self._grace_task is not None:
            self._grace_task.cancel()
            self._grace_task = None

    def _spawn_background(self, work: Any) -> None:
        task = asyncio.ensure_future(work)
        self._background.add(task)
        task.add_done_callback(_log_background_failure)
        task.add_done_callback(self._background.discard)

    async def _heartbeat(self, ws: ClientConnection) -> None:
        """Pings the gateway every interval; returns once it has been silent too long."""
        loop = asyncio.get_running_loop()
        while True:
            interval_s = self._heartbeat_interval_s
            await asyncio.sleep(interval_s)
            if loop.time() - self._last_heard > SILENT_INTERVALS * interval_s:
                _log.warning(
                    "gateway silent for %d heartbeats: dropping the link", SILENT_INTERVALS
                )
                return
            # Sent from a task of its own: nothing this loop does waits on the gateway.
            self._send_soon(ws, Ping(sent_at=time.time()).model_dump())

    def _send_soon(
        self, ws: ClientConnection, message: dict[str, Any], payload: bytes | None = None
    ) -> None:
        """Send without making the caller wait (heartbeats, pongs); cancelled with the
        connection's other tasks when it drops."""
        self._spawn_for_connection(self._send_quietly(ws, message, payload))

    def _spawn_for_connection(self, work: Coroutine[Any, Any, None]) -> None:
        """Run `work` in a task cancelled with the connection's others when it drops."""
        task = asyncio.create_task(work)
        self._connection_tasks.add(task)
        task.add_done_callback(self._connection_tasks.discard)
        task.add_done_callback(_log_background_failure)

    async def _send_quietly(
        self, ws: ClientConnection, message: dict[str, Any], payload: bytes | None = None
    ) -> None:
        with contextlib.suppress(ConnectionClosed):
            await self._send(ws, message, payload)

    async def _note_displays(self, ws: ClientConnection, displays: list[DisplayInfo]) -> None:
        body = DisplaysNote(displays=displays).model_dump()
        await self._send_quietly(ws, Note(op=DESKTOP_DISPLAYS, body=body).model_dump())

    async def _note_desktop_state(self, ws: ClientConnection, state: ops.DesktopState) -> None:
        body = ops.DesktopStateNote(state=state).model_dump()
        await self._send_quietly(ws, Note(op=ops.DESKTOP_STATE, body=body).model_dump())

    async def _note_owner_presence(self, ws: ClientConnection, active: bool) -> None:
        body = ops.OwnerPresenceNote(active=active).model_dump()
        await self._send_quietly(ws, Note(op=ops.OWNER_PRESENCE, body=body).model_dump())

    # ---- frames ---------------------------------------------------------------------

    async def _read(self, ws: ClientConnection) -> None:
        """Hands each message to `_on_message` until the connection ends, the gateway
        sends what cannot be decoded (closed with 1007), or handling fails (1011)."""
        loop = asyncio.get_running_loop()
        with contextlib.suppress(ConnectionClosed):
            async for message in ws:
                self._last_heard = loop.time()
                try:
                    readable = self._on_message(ws, message)
                except Exception:
                    _log.exception("the host link failed on a message from the gateway")
                    await ws.close(1011, "internal error")
                    return
                if not readable:
                    await ws.close(1007, "undecodable frame")
                    return

    def _on_message(self, ws: ClientConnection, message: str | bytes) -> bool:
        """Handle one message; False when it cannot be decoded."""
        try:
            header, _ = decode_frame(message)
        except FramingError as exc:
            _log.warning("undecodable frame from the gateway: %s", exc)
            return False
        kind = header.get("t")
        if kind == "req":
            self._on_request(ws, header)
        elif kind == "res":
            self._on_reply(header)
        elif kind == "ping":
            try:
                ping = Ping.model_validate(header)
            except ValidationError:
                _log.warning("malformed ping from the gateway dropped")
            else:
                # Not awaited: the reader must keep reading (and hearing) the peer.
                self._send_soon(ws, Pong(sent_at=ping.sent_at).model_dump())
        elif kind != "pong":
            _log.debug("ignoring a %r frame", kind)
        return True

    def _on_request(self, ws: ClientConnection, header: dict[str, Any]) -> None:
        try:
            request = Request.model_validate(header)
        except ValidationError:
            _log.warning("malformed request from the gateway dropped")
            return
        loop = asyncio.get_running_loop()
        responder = _Responder(self, loop, ws, request.id)
        reply_of_op: Awaitable[OpReply]
        if request.op in ORDERED_OPS:
            reply_of_op = self._in_lane(request, loop.time(), responder)
        else:
            # Begun here, not in the task's first step: a screen capture is on the
            # screen worker before that task runs (decision 0009).
            reply_of_op = self._dispatcher.start(request.op, request.body, responder)
        self._spawn_for_connection(self._answer(ws, request, reply_of_op, responder))

    def _on_reply(self, header: dict[str, Any]) -> None:
        try:
            reply = Reply.model_validate(header)
        except ValidationError:
            _log.warning("malformed reply from the gateway dropped")
            return
        future = self._pending.get(reply.id)
        if future is not None and not future.done():
            future.set_result(reply)

    async def _answer(
        self,
        ws: ClientConnection,
        request: Request,
        reply_of_op: Awaitable[OpReply],
        responder: _Responder,
    ) -> None:
        payload: bytes | None = None
        try:
            body, payload = await reply_of_op
            if responder.answered:
                return
            reply: dict[str, Any] = {"t": "res", "id": request.id, "ok": True, "body": body}
        except HostOpError as exc:
            if responder.answered:
                # Its reply is on its way; a second one for the same id would contradict it.
                _log.warning("%s failed after it had answered: %s", request.op, exc)
                return
            error = {"code": exc.code, "detail": exc.detail}
            reply = {"t": "res", "id": request.id, "ok": False, "error": error}
            if exc.body is not None:
                reply["body"] = exc.body
        with contextlib.suppress(ConnectionClosed):
            await self._send(ws, reply, payload)

    async def _in_lane(
        self, request: Request, received_at: float, responder: _Responder
    ) -> OpReply:
        """An ordered op, run after the session's earlier ones (`ORDERED_OPS`)."""
        lane = str(request.body.get("session_id"))
        async with self._lanes.hold(lane):
            waited_s = asyncio.get_running_loop().time() - received_at
            if waited_s * 1000 > request.deadline_ms:
                # The gateway already answered its caller 504; acting now would surprise
                # a caller that may be retrying (a batch typed twice).
                raise HostOpError(ops.ERROR_HOST, "deadline passed before the op could start")
            return await self._dispatcher.handle(request.op, request.body, responder)

    def _send_answer(self, ws: ClientConnection, data: bytes) -> None:
        """On the loop: send a reply a `_Responder` joined on another thread."""
        if ws is not self._ws:
            # The link dropped: the gateway failed this call with it.
            return
        self._spawn_for_connection(self._send_data_quietly(ws, data))

    async def _send(
        self, ws: ClientConnection, message: dict[str, Any], payload: bytes | None = None
    ) -> None:
        data: str | bytes = (
            encode_text(message) if payload is None else encode_binary(message, payload)
        )
        # websockets writes each message whole, so sends from several tasks never
        # interleave.
        await ws.send(data)

    async def _send_data_quietly(self, ws: ClientConnection, data: bytes) -> None:
        with contextlib.suppress(ConnectionClosed):
            await ws.send(data)


def _raise_if_fatal(code: int | None, reason: str | None) -> None:
    why = f" ({reason})" if reason else ""
    if code == CLOSE_BAD_TOKEN:
        raise LinkAuthError(f"the gateway refused the rig token (4401{why}); pair this rig again")
    if code == CLOSE_PROTOCOL_UNSUPPORTED:
        raise LinkProtocolError(
            f"the gateway does not support this agent's protocol (4400{why}); update the agent"
        )
    if code == CLOSE_REPLACED:
        raise LinkReplacedError(f"another agent connected as this rig (4409{why}); this one stops")


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _log_background_failure(task: asyncio.Future[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        _log.error("background link task failed", exc_info=task.exception())

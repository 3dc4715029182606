"""One connected host agent: request/reply with ids and deadlines, heartbeats.

`request()` is safe to call from many tasks at once (observe's three legs run
concurrently); replies are matched by id. A reply that arrives after its deadline
finds no waiter and is dropped.

`desktop_state` is the host's latest word on its desktop (the hello's, then each
`desktop/state` note, or anything fresher a reply showed): in memory only, gone with
the connection, so an offline rig has none. `displays` likewise: the hello's, then
each `desktop/displays` note's; `owner_active` each `owner/presence` note's.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError
from starlette.websockets import WebSocket, WebSocketDisconnect

from rigway.protocol import Hello, Note, Ping, Pong, Reply, Request, decode_frame, encode_text, ops
from rigway.protocol.displays import DESKTOP_DISPLAYS, DisplayInfo, DisplaysNote
from rigway.protocol.framing import FramingError

logger = logging.getLogger(__name__)

AgentRequestHandler = Callable[[str, "HostConnection", dict[str, Any]], Awaitable[dict[str, Any]]]


@dataclass(frozen=True, slots=True)
class HostReply:
    body: dict[str, Any]
    payload: memoryview  # into the frame it came in


class HostTimeoutError(Exception):
    """The host did not answer before the deadline."""


class HostUnavailableError(Exception):
    """The link closed before (or while) the request was sent."""


class HostOpError(Exception):
    """The host answered with an error. `body` is the failed reply's own body (an
    input batch stopped on the host says there what ran: `ops.InputStopped`); empty
    when it sent none. Untrusted, as every reply."""

    def __init__(self, code: str, detail: str, body: dict[str, Any] | None = None) -> None:
        super().__init__(f"{code}: {detail}")
        self.code = code
        self.detail = detail
        self.body: dict[str, Any] = {} if body is None else body


class HostConnection:
    def __init__(
        self,
        rig_id: str,
        websocket: WebSocket,
        hello: Hello,
        *,
        heartbeat_interval_s: float,
        monotonic: Callable[[], float],
        on_agent_request: AgentRequestHandler,
        on_op_done: Callable[[str, float, str], None] = lambda op, seconds, outcome: None,
    ) -> None:
        self._on_op_done = on_op_done
        self.rig_id = rig_id
        self.hello = hello
        # An agent that does not report its desktop's state leaves it "unknown".
        self.desktop_state: ops.DesktopState = (
            "unknown" if hello.desktop_state is None else hello.desktop_state
        )
        # Whether the owner uses the rig's own input: each `owner/presence` note's, or
        # what a reply showed since.
        self.owner_active = False
        # The host's monitors: the hello's, then each `desktop/displays` note's.
        self.displays: list[DisplayInfo] = list(hello.displays)
        self._websocket = websocket
        self._heartbeat_interval_s = heartbeat_interval_s
        self._monotonic = monotonic
        self._on_agent_request = on_agent_request
        self._pending: dict[str, asyncio.Future[HostReply]] = {}
        self._ids = itertools.count(1)
        self._send_lock = asyncio.Lock()
        self._last_heard = monotonic()
        self._closed = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()
        self._undecodable = False

    @property
    def is_open(self) -> bool:
        return not self._closed.is_set() and not self._undecodable

    async def request(
        self,
        op: str,
        body: dict[str, Any],
        timeout_s: float,
    ) -> HostReply:
        """The host's reply to `op`: its body, and its binary payload as a view into
        the frame it came in (a screenshot's JPEG, not copied on the way to the
        response)."""
        if not self.is_open:
            raise HostUnavailableError("the host link is closed")
        request_id = f"g{next(self._ids)}"
        waiter: asyncio.Future[HostReply] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = waiter
        # The `Request` frame, built as the dict it dumps to: validating what this
        # gateway itself wrote only to dump it again cost a model round trip per call.
        message = {
            "t": "req",
            "id": request_id,
            "op": op,
            "deadline_ms": max(1, int(timeout_s * 1000)),
            "body": body,
        }
        started = time.perf_counter()
        outcome = "unavailable"
        try:
            # The send is inside the deadline: a host that stops reading fills the
            # socket, and the caller must still get its 504 on time.
            async with asyncio.timeout(timeout_s):
                await self._send_text(message)
                reply = await waiter
            outcome = "ok"
            return reply
        except TimeoutError as exc:
            outcome = "timeout"
            raise HostTimeoutError(f"{op} got no answer within {timeout_s:g} s") from exc
        except HostOpError:
            outcome = "error"
            raise
        finally:
            self._pending.pop(request_id, None)
            self._on_op_done(op, time.perf_counter() - started, outcome)

    async def serve(self) -> None:
        """Run until the link closes; fails every pending request when it does."""
        heartbeat = asyncio.create_task(self._heartbeat())
        try:
            while True:
                message = await self._websocket.receive()
                if message["type"] == "websocket.disconnect":
                    break
                raw = message.get("bytes")
                raw = raw if raw is not None else message.get("text")
                if raw is not None:
                    self._on_message(raw)
        except (WebSocketDisconnect, RuntimeError) as exc:
            logger.info("host link of %s closed: %s", self.rig_id, exc)
        finally:
            heartbeat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await heartbeat
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            self._fail_pending()
            self._closed.set()

    async def close(self, code: int = 1000, reason: str = "") -> None:
        if self._closed.is_set():
            return
        with contextlib.suppress(RuntimeError, WebSocketDisconnect):
            await self._websocket.close(code=code, reason=reason)
        self._fail_pending()
        self._closed.set()

    def _on_message(self, raw: str | bytes) -> None:
        """One frame from the host."""
        if self._undecodable:
            return
        self._last_heard = self._monotonic()
        try:
            self._handle_frame(raw)
        except FramingError as exc:
            # Nothing more is heard on this link: a peer that garbles one frame cannot be
            # trusted to frame the next. Its callers learn now, not at their deadlines
            # (the close may wait on a host that stopped reading), and no new call goes.
            self._undecodable = True
            logger.info("host link of %s closed: %s", self.rig_id, exc)
            self._fail_pending()
            self._spawn(self.close(code=1007, reason="undecodable frame"))

    def _handle_frame(self, raw: str | bytes) -> None:
        header, payload = decode_frame(raw)
        kind = header.get("t")
        try:
            if kind == "res":
                self._resolve(Reply.model_validate(header), payload)
            elif kind == "req":
                self._spawn(self._answer_agent(Request.model_validate(header)))
            elif kind == "note":
                self._on_note(Note.model_validate(header))
            elif kind == "ping":
                # Not awaited: this loop must keep reading even while a send is stuck.
                pong = Pong(sent_at=Ping.model_validate(header).sent_at)
                self._spawn(self._send_quietly(pong.model_dump()))
        except ValidationError as exc:
            logger.warning("malformed %r frame from %s: %s", kind, self.rig_id, exc)

    def _resolve(self, reply: Reply, payload: memoryview) -> None:
        waiter = self._pending.get(reply.id)
        if waiter is None or waiter.done():
            return
        if reply.ok:
            waiter.set_result(HostReply(reply.body, payload))
        else:
            error = reply.error
            code, detail = (error.code, error.detail) if error is not None else ("host_error", "")
            waiter.set_exception(HostOpError(code, detail, reply.body))

    def _on_note(self, note: Note) -> None:
        if note.op == ops.DESKTOP_STATE:
            self.desktop_state = ops.DesktopStateNote.model_validate(note.body).state
        elif note.op == DESKTOP_DISPLAYS:
            self.displays = list(DisplaysNote.model_validate(note.body).displays)
        elif note.op == ops.OWNER_PRESENCE:
            self.owner_active = ops.OwnerPresenceNote.model_validate(note.body).active
        else:
            logger.debug("ignoring a %r note from %s", note.op, self.rig_id)

    async def _answer_agent(self, request: Request) -> None:
        try:
            body = await self._on_agent_request(request.op, self, request.body)
            reply = Reply(id=request.id, ok=True, body=body)
        except HostOpError as exc:
            reply = Reply.model_validate(
                {"id": request.id, "ok": False, "error": {"code": exc.code, "detail": exc.detail}}
            )
        except Exception as exc:  # an answer is owed even when the gateway failed
            logger.exception("agent request %s from %s failed", request.op, self.rig_id)
            error = {"code": "host_error", "detail": f"the gateway failed: {type(exc).__name__}"}
            reply = Reply.model_validate({"id": request.id, "ok": False, "error": error})
        with contextlib.suppress(HostUnavailableError):
            await self._send_text(reply.model_dump())

    async def _heartbeat(self) -> None:
        interval = self._heartbeat_interval_s
        while True:
            await asyncio.sleep(interval)
            if self._monotonic() - self._last_heard > 3 * interval:
                logger.info("host %s silent for %.1f s; closing", self.rig_id, 3 * interval)
                await self.close(code=4408, reason="heartbeat_timeout")
                return
            # From a task of its own, so a stuck send cannot stop the silence check.
            self._spawn(self._send_quietly(Ping(sent_at=self._monotonic()).model_dump()))

    async def _send_text(self, message: dict[str, Any]) -> None:
        try:
            async with self._send_lock:
                await self._websocket.send_text(encode_text(message))
        except (RuntimeError, WebSocketDisconnect, OSError) as exc:
            raise HostUnavailableError(str(exc)) from exc

    async def _send_quietly(self, message: dict[str, Any]) -> None:
        with contextlib.suppress(HostUnavailableError):
            await self._send_text(message)

    def _fail_pending(self) -> None:
        for waiter in self._pending.values():
            if not waiter.done():
                waiter.set_exception(HostUnavailableError("the host link closed"))
        self._pending.clear()

    def _spawn(self, coroutine: Awaitable[None]) -> None:
        task: asyncio.Task[None] = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

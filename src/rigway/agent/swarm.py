"""A swarm of simulated rigs on the real host link, for load tests and benchmarks.

One process links N rigs to one gateway node or several, each over its own WebSocket to
`/v1/agent/connect` with its own rig token: hello and welcome, pings and pongs both
ways, `req`/`res` framing and binary image frames as in docs/protocol.md. Every answer
is canned and costs next to nothing: one small JPEG encoded once for every screen
capture, a fixed target list, no dirty rectangles, an input batch's receipts, session
start and end acknowledged. So hundreds of rigs fit in one process, and what a load run
measures is the gateway, not the rigs.

Why not `AgentLink` with a canned `Desktop`: the real agent gives each rig an input
thread, a screen worker and JPEG strip encoders besides its link tasks, and validates
every message with pydantic; hundreds of rigs would be a thousand threads. A swarm rig
is two tasks (reader and heartbeat) and answers from the reader.

A rig keeps its link up like the real agent: it dials the next gateway URL after a
failed dial or a dropped link (a node that drains closes links with 1012), backs off
per round of every URL failing, and names its open session in the next hello. A close
for a bad or replaced token (4401, 4409) or an unsupported protocol (4400) stops that
rig only.

Run: `python -m rigway.agent.swarm --gateway http://127.0.0.1:8080 --tokens-file F`
(one rig token a line), or `--pairing-codes-file F` (one pairing code a line, each
paired through `/v1/agent/pair`, with `--write-tokens F` to keep the tokens). It prints
`linked N/N` once every rig is linked, and runs until SIGINT or SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import random
import signal
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import numpy as np
import simplejpeg
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus, WebSocketException

from rigway import event_loop
from rigway.agent.link import (
    CLOSE_BAD_TOKEN,
    CLOSE_PROTOCOL_UNSUPPORTED,
    CLOSE_REPLACED,
    SILENT_INTERVALS,
    backoff_delay_s,
)
from rigway.agent.pairing import PairingResult, pair
from rigway.agent.runner import connect_url
from rigway.protocol import ops
from rigway.protocol.framing import FramingError, decode_frame, encode_binary, encode_text
from rigway.protocol.messages import PROTOCOL_VERSION, Hello, Welcome

__all__ = [
    "CannedScreen",
    "RigSwarm",
    "SwarmRig",
    "main",
    "pair_rigs",
]

_log = logging.getLogger(__name__)

AGENT_VERSION: Final = "0.0.0-swarm"
NATIVE_WIDTH: Final = 1920
NATIVE_HEIGHT: Final = 1080
_FATAL_CLOSES: Final = frozenset({CLOSE_BAD_TOKEN, CLOSE_PROTOCOL_UNSUPPORTED, CLOSE_REPLACED})
# Dials at once while a swarm comes up: the gateway authenticates each link against
# its store, and a few hundred at the same instant would only queue there.
_DIAL_CONCURRENCY: Final = 32


@dataclass(frozen=True)
class CannedScreen:
    """What every rig of a swarm shows: one JPEG and one target list, made once."""

    jpeg: bytes
    width: int
    height: int
    targets: tuple[ops.Target, ...]
    native_width: int = NATIVE_WIDTH
    native_height: int = NATIVE_HEIGHT

    @classmethod
    def default(cls, width: int = 480, height: int = 270, quality: int = 75) -> CannedScreen:
        """A window-like picture (a few KB as JPEG) and three controls on it."""
        pixels = np.full((height, width, 3), 235, dtype=np.uint8)
        pixels[: height // 8] = (40, 70, 140)  # title bar
        pixels[height // 3 : height // 3 + 24, width // 8 : width // 2] = 255  # text field
        pixels[height // 2 : height // 2 + 28, width // 8 : width // 8 + 80] = (60, 120, 220)
        jpeg = simplejpeg.encode_jpeg(pixels, quality=quality, colorspace="RGB")
        scale_x, scale_y = NATIVE_WIDTH / width, NATIVE_HEIGHT / height

        def target(
            target_id: str, role: str, name: str, box: tuple[int, int, int, int]
        ) -> ops.Target:
            x, y, w, h = box
            return ops.Target(
                id=target_id,
                role=role,
                name=name,
                x=round(x * scale_x),
                y=round(y * scale_y),
                w=round(w * scale_x),
                h=round(h * scale_y),
            )

        targets = (
            target("name", "text", "Name", (width // 8, height // 3, width * 3 // 8, 24)),
            target("ok", "push button", "OK", (width // 8, height // 2, 80, 28)),
            target("remember", "check box", "Remember me", (width // 8, height * 2 // 3, 20, 20)),
        )
        return cls(jpeg=jpeg, width=width, height=height, targets=targets)


class _Answers:
    """The canned reply bodies, dumped once for every rig of the swarm."""

    def __init__(self, screen: CannedScreen) -> None:
        self.jpeg = screen.jpeg
        self.captured = ops.ScreenCaptured(
            width=screen.width,
            height=screen.height,
            native_width=screen.native_width,
            native_height=screen.native_height,
            host_jpeg_ms=0.0,
            cached=True,
            marked=False,
        ).model_dump()
        self.started = ops.SessionStarted(
            native_width=screen.native_width,
            native_height=screen.native_height,
            capture_mode="swarm",
        ).model_dump()
        self.ended = ops.SessionEnded().model_dump()
        self.dirty = ops.DirtyRects(
            width=screen.native_width,
            height=screen.native_height,
            available=True,
            capture_mode="swarm",
            rects=[],
            desktop_state="normal",
            owner_active=False,
        ).model_dump()
        self.targets = ops.TargetSnapshot(
            width=screen.native_width,
            height=screen.native_height,
            window_title="Swarm window",
            window_role="frame",
            targets=list(screen.targets),
            truncated=False,
            host_uia_ms=0.0,
        ).model_dump()
        self.unchanged = ops.ScreenChanged(known=True, damage_mark=0).model_dump()
        self.waited = ops.ScreenWaited(met=True, waited_ms=0.0).model_dump()
        self.launched = ops.AppLaunched(pid=4242).model_dump()
        self.killed = ops.AppsKilled(killed=[]).model_dump()


def _input_done(body: dict[str, Any]) -> dict[str, Any]:
    """Receipts for every event of the batch, each run at once at the point it named."""
    events = body.get("events")
    receipts = []
    for index, event in enumerate(events if isinstance(events, list) else []):
        kind = event.get("type", "") if isinstance(event, dict) else ""
        receipt: dict[str, Any] = {
            "index": index, "type": kind, "ok": True, "at_ms": 0.0, "changed": False,
        }  # fmt: skip
        if isinstance(event, dict) and kind.startswith("mouse_"):
            receipt["x"], receipt["y"] = event.get("x"), event.get("y")
        receipts.append(receipt)
    done: dict[str, Any] = {"count": len(receipts), "events": receipts}
    if isinstance(body, dict) and body.get("settle") is not None:
        done["settle"] = {"settled": True, "waited_ms": 0.0}
    return done


@dataclass
class _RigState:
    session_id: str | None = None
    served: Counter[str] = field(default_factory=Counter)


class SwarmRig:
    """One simulated rig: its link to the gateway, kept up until `stop()`."""

    def __init__(
        self,
        urls: Sequence[str],
        rig_token: str,
        answers: _Answers,
        *,
        heartbeat_interval_s: float = 5.0,
        backoff_initial_s: float = 0.5,
        backoff_max_s: float = 30.0,
        dial_slots: asyncio.Semaphore | None = None,
        on_link_change: Callable[[bool], None] | None = None,
        rng: random.Random | None = None,
        first_url: int = 0,
    ) -> None:
        """`urls`: each node's `ws(s)://…/v1/agent/connect`, tried in turn from the one
        at index `first_url`."""
        if not urls:
            raise ValueError("no gateway URL")
        self._urls = list(urls)
        self._url_index = first_url % len(self._urls)
        self._token = rig_token
        self._answers = answers
        self._heartbeat_interval_s = heartbeat_interval_s
        self._backoff = (backoff_initial_s, backoff_max_s)
        self._dial_slots = dial_slots
        self._on_link_change = on_link_change
        self._rng = rng if rng is not None else random.Random()  # noqa: S311 (jitter only)
        self._state = _RigState()
        self._stopping = asyncio.Event()
        self._ws: ClientConnection | None = None
        self._closing: set[asyncio.Task[None]] = set()
        self._last_heard = 0.0
        self.rig_id: str | None = None
        self.is_linked = False
        self.connection_count = 0
        # Why the rig stopped for good (a close code retrying cannot fix), if it did.
        self.fatal: str | None = None

    @property
    def active_session_id(self) -> str | None:
        return self._state.session_id

    @property
    def served(self) -> Counter[str]:
        """Requests answered, by operation name."""
        return self._state.served

    def stop(self) -> None:
        self._stopping.set()
        if self._ws is not None:
            task = asyncio.ensure_future(self._ws.close(1001, "swarm stopping"))
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)

    async def run(self) -> None:
        """Link, serve and relink until `stop()` or a fatal close."""
        attempt = 0
        while not self._stopping.is_set():
            count_before = self.connection_count
            try:
                close_code = await self._connect_once()
            except InvalidStatus as exc:
                close_code = None
                if exc.response.status_code in (401, 403):
                    close_code = CLOSE_BAD_TOKEN
            except ConnectionClosed as exc:
                # Closed before the welcome: how a gateway refuses a token (4401).
                close_code = None if exc.rcvd is None else exc.rcvd.code
            except (OSError, TimeoutError, FramingError, ValueError, WebSocketException) as exc:
                _log.debug("swarm rig link to %s failed: %s", self._urls[self._url_index], exc)
                close_code = None
            if close_code in _FATAL_CLOSES:
                self.fatal = f"closed with {close_code}"
                _log.warning("swarm rig %s stops: %s", self.rig_id, self.fatal)
                return
            if self._stopping.is_set():
                return
            attempt = 0 if self.connection_count > count_before else attempt + 1
            self._url_index = (self._url_index + 1) % len(self._urls)
            round_attempt = attempt // len(self._urls) if attempt else 0
            delay_s = backoff_delay_s(round_attempt, *self._backoff, self._rng)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), delay_s)

    async def _connect_once(self) -> int | None:
        """One connection, until it ends: its close code (None if it never opened)."""
        slots = self._dial_slots if self._dial_slots is not None else contextlib.nullcontext()
        async with slots:
            ws = await connect(
                self._urls[self._url_index],
                additional_headers={"Authorization": f"Bearer {self._token}"},
                compression=None,
                ping_interval=None,
                close_timeout=2.0,
                user_agent_header=f"rigway-agent/{AGENT_VERSION}",
            )
            try:
                welcome = await self._handshake(ws)
            except BaseException:
                await ws.close()
                raise
        self._ws = ws
        self.rig_id = welcome.rig_id
        self._heartbeat_interval_s = welcome.heartbeat_interval_s
        if self._state.session_id in welcome.ended_session_ids:
            self._state.session_id = None
        self.connection_count += 1
        self._set_linked(True)
        try:
            if self._stopping.is_set():
                await ws.close(1001, "swarm stopping")
            else:
                await self._serve(ws)
        finally:
            self._ws = None
            self._set_linked(False)
            # A frame that could not be read ends the link here too (no-op once closed).
            await ws.close(1007 if ws.close_code is None else 1000)
        return ws.close_code

    def _set_linked(self, linked: bool) -> None:
        self.is_linked = linked
        if self._on_link_change is not None:
            self._on_link_change(linked)

    async def _handshake(self, ws: ClientConnection) -> Welcome:
        open_sessions = [] if self._state.session_id is None else [self._state.session_id]
        hello = Hello(
            protocol=PROTOCOL_VERSION,
            agent_version=AGENT_VERSION,
            os="swarm",
            backend="swarm",
            capture_mode="swarm",
            native_width=self._answers.started["native_width"],
            native_height=self._answers.started["native_height"],
            open_session_ids=open_sessions,
            desktop_state="normal",
        )
        await ws.send(encode_text(hello.model_dump()))
        async with asyncio.timeout(10.0):
            header, _ = decode_frame(await ws.recv())
        if header.get("t") != "welcome":
            raise FramingError(f"expected welcome, got {header.get('t')!r}")
        return Welcome.model_validate(header)

    async def _serve(self, ws: ClientConnection) -> None:
        loop = asyncio.get_running_loop()
        self._last_heard = loop.time()
        heartbeat = asyncio.create_task(self._heartbeat(ws))
        try:
            with contextlib.suppress(ConnectionClosed):
                async for message in ws:
                    self._last_heard = loop.time()
                    reply = self._reply_to(message)
                    if reply is not None:
                        await ws.send(reply)
        finally:
            heartbeat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await heartbeat

    async def _heartbeat(self, ws: ClientConnection) -> None:
        loop = asyncio.get_running_loop()
        # Rigs linked at once would otherwise all ping in the same instant.
        await asyncio.sleep(self._rng.uniform(0, self._heartbeat_interval_s))
        while True:
            if loop.time() - self._last_heard > SILENT_INTERVALS * self._heartbeat_interval_s:
                await ws.close(1011, "gateway silent")
                return
            with contextlib.suppress(ConnectionClosed):
                await ws.send(encode_text({"t": "ping", "sent_at": time.time()}))
            await asyncio.sleep(self._heartbeat_interval_s)

    def _reply_to(self, message: str | bytes) -> str | bytes | None:
        header, _ = decode_frame(message)
        kind = header.get("t")
        if kind == "ping":
            return encode_text({"t": "pong", "sent_at": header.get("sent_at", 0.0)})
        if kind != "req":
            return None
        request_id, op = header.get("id"), header.get("op")
        body = header.get("body")
        if not isinstance(request_id, str) or not isinstance(op, str) or not isinstance(body, dict):
            return None
        self._state.served[op] += 1
        return self._answer(request_id, op, body)

    def _answer(self, request_id: str, op: str, body: dict[str, Any]) -> str | bytes:
        answers = self._answers
        if op == ops.SESSION_START:
            self._state.session_id = body.get("session_id")
            return _ok(request_id, answers.started)
        session_id = body.get("session_id")
        if op == ops.WAKE_SEND:
            return _ok(request_id, {})
        if session_id is None or session_id != self._state.session_id:
            return _error(request_id, ops.ERROR_SESSION_MISMATCH, "not this rig's session")
        if op == ops.SCREEN_CAPTURE:
            message = {"t": "res", "id": request_id, "ok": True, "body": answers.captured}
            return encode_binary(message, answers.jpeg)
        canned = {
            ops.SCREEN_DIRTY: answers.dirty,
            ops.A11Y_TARGETS: answers.targets,
            ops.SCREEN_CHANGED_SINCE: answers.unchanged,
            ops.SCREEN_WAIT: answers.waited,
            ops.SCREEN_DIRTY_RETURN: {},
            ops.SESSION_OWNER_IDLE: {},
            ops.APP_LAUNCH: answers.launched,
            ops.APP_KILL: answers.killed,
        }.get(op)
        if canned is not None:
            return _ok(request_id, canned)
        if op == ops.INPUT_BATCH:
            return _ok(request_id, _input_done(body))
        if op == ops.SESSION_END:
            self._state.session_id = None
            return _ok(request_id, answers.ended)
        return _error(request_id, ops.ERROR_UNKNOWN_OP, f"a swarm rig does not do {op}")


def _ok(request_id: str, body: dict[str, Any]) -> str:
    return encode_text({"t": "res", "id": request_id, "ok": True, "body": body})


def _error(request_id: str, code: str, detail: str) -> str:
    error = {"code": code, "detail": detail}
    return encode_text({"t": "res", "id": request_id, "ok": False, "error": error})


class RigSwarm:
    """N swarm rigs in this process, one token each, all serving the same canned screen."""

    def __init__(
        self,
        gateway_urls: Sequence[str],
        rig_tokens: Sequence[str],
        *,
        screen: CannedScreen | None = None,
        heartbeat_interval_s: float = 5.0,
        backoff_initial_s: float = 0.5,
        backoff_max_s: float = 30.0,
    ) -> None:
        """`gateway_urls`: each node's base URL (`http(s)://host`) or connect URL."""
        urls = [connect_url(url) for url in gateway_urls]
        answers = _Answers(screen if screen is not None else CannedScreen.default())
        dial_slots = asyncio.Semaphore(_DIAL_CONCURRENCY)
        self._linked_count = 0
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []
        self.rigs = [
            SwarmRig(
                urls,
                token,
                answers,
                heartbeat_interval_s=heartbeat_interval_s,
                backoff_initial_s=backoff_initial_s,
                backoff_max_s=backoff_max_s,
                dial_slots=dial_slots,
                on_link_change=self._notify,
                # Spread over the nodes, as agents behind a load balancer would be.
                first_url=index,
            )
            for index, token in enumerate(rig_tokens)
        ]

    @property
    def linked_count(self) -> int:
        return self._linked_count

    def served(self) -> Counter[str]:
        """Requests every rig answered, by operation name."""
        total: Counter[str] = Counter()
        for rig in self.rigs:
            total.update(rig.served)
        return total

    def rig(self, rig_id: str) -> SwarmRig:
        return next(rig for rig in self.rigs if rig.rig_id == rig_id)

    def _notify(self, linked: bool) -> None:
        self._linked_count += 1 if linked else -1
        for wanted, waiter in self._waiters:
            if self._linked_count >= wanted and not waiter.done():
                waiter.set_result(None)

    async def wait_linked(self, count: int | None = None) -> None:
        """Until `count` rigs (default: all) are linked; wrap in asyncio.timeout."""
        wanted = len(self.rigs) if count is None else count
        if self._linked_count >= wanted:
            return
        entry = (wanted, asyncio.get_running_loop().create_future())
        self._waiters.append(entry)
        try:
            await entry[1]
        finally:
            self._waiters.remove(entry)

    async def run(self) -> None:
        """Every rig's link, until `stop()`."""
        await asyncio.gather(*(rig.run() for rig in self.rigs))

    def stop(self) -> None:
        for rig in self.rigs:
            rig.stop()


async def pair_rigs(
    base_url: str, codes: Sequence[str], *, name_prefix: str = "swarm", concurrency: int = 8
) -> list[PairingResult]:
    """Each code traded for a rig through `/v1/agent/pair`, in the codes' order."""
    slots = asyncio.Semaphore(concurrency)

    async def pair_one(index: int, code: str) -> PairingResult:
        async with slots:
            return await pair(base_url, code, name=f"{name_prefix}-{index + 1}", os="swarm", gpu="")

    return list(await asyncio.gather(*(pair_one(i, code) for i, code in enumerate(codes))))


def _lines(path: Path) -> list[str]:
    return [line.strip() for line in path.read_text().splitlines() if line.strip()]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m rigway.agent.swarm",
        description="Link N simulated rigs with canned answers to a gateway, for load.",
    )
    parser.add_argument(
        "--gateway", action="append", required=True, metavar="URL",
        help="A gateway node's URL (repeat for several nodes: each rig tries them in turn).",
    )  # fmt: skip
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--tokens-file", type=Path, help="One rig token a line.")
    source.add_argument(
        "--pairing-codes-file", type=Path, help="One pairing code a line, each paired first."
    )
    parser.add_argument(
        "--write-tokens", type=Path, help="With --pairing-codes-file: keep the tokens here."
    )
    parser.add_argument("--rigs", type=int, help="Link only the first N rigs.")
    parser.add_argument("--heartbeat-s", type=float, default=5.0, help=argparse.SUPPRESS)
    return parser


async def run_from_args(args: argparse.Namespace, stop: asyncio.Event) -> int:
    """The command's work: pair if asked, link every rig, serve until `stop`."""
    if args.pairing_codes_file is not None:
        paired = await pair_rigs(args.gateway[0], _lines(args.pairing_codes_file))
        tokens = [result.rig_token for result in paired]
        if args.write_tokens is not None:
            args.write_tokens.write_text("".join(f"{token}\n" for token in tokens))
            args.write_tokens.chmod(0o600)
        for result in paired:
            print(f"paired {result.rig_id}", flush=True)
    else:
        tokens = _lines(args.tokens_file)
    if args.rigs is not None:
        tokens = tokens[: args.rigs]
    swarm = RigSwarm(args.gateway, tokens, heartbeat_interval_s=args.heartbeat_s)
    running = asyncio.create_task(swarm.run())
    try:
        linked = asyncio.create_task(swarm.wait_linked())
        stopped = asyncio.create_task(stop.wait())
        await asyncio.wait({linked, stopped, running}, return_when=asyncio.FIRST_COMPLETED)
        if linked.done():
            print(f"linked {swarm.linked_count}/{len(swarm.rigs)}", flush=True)
            await asyncio.wait({stopped, running}, return_when=asyncio.FIRST_COMPLETED)
        linked.cancel()
        stopped.cancel()
    finally:
        swarm.stop()
        await running
    served = swarm.served()
    print("served " + " ".join(f"{op}={n}" for op, n in sorted(served.items())), flush=True)
    return 1 if any(rig.fatal is not None for rig in swarm.rigs) else 0


async def _run_until_signal(args: argparse.Namespace) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    return await run_from_args(args, stop)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    return event_loop.run(_run_until_signal(args))


if __name__ == "__main__":  # pragma: no cover (run as a command)
    sys.exit(main())

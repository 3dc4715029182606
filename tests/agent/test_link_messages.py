"""How the agent's link reads what the gateway sends, against a scripted gateway on
127.0.0.1: the order of messages, whole fragmented messages, and the close codes of
what cannot be read (websockets' own checks and the link's)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

import pytest
from websockets.asyncio.server import ServerConnection, serve

from rigway.agent.backends.sim import SimDesktop
from rigway.agent.dispatch import Dispatcher
from rigway.agent.link import MAX_FRAME_BYTES, AgentLink, LinkReplacedError
from rigway.agent.worker import SerialWorker
from rigway.event_loop import run as run_on_the_agents_loop
from rigway.protocol import Welcome, decode_frame, encode_binary, encode_text
from tests.agent.assembly import dispatcher_over
from tests.agent.fake_gateway import RIG_TOKEN, FakeGateway, fake_hello
from tests.agent.fakes import FakeApps, RecordingDesktop

Script = Callable[[ServerConnection], Awaitable[None]]

WELCOME = encode_text(Welcome(rig_id="rig-1", heartbeat_interval_s=30.0).model_dump())
# Past websockets' default bound on the frames of one message (4096).
TOO_MANY_FRAGMENTS = 10_000


@dataclass
class ScriptedGateway:
    url: str
    # Each connection's close code as the gateway received it from the agent.
    close_codes: asyncio.Queue[int | None]


@contextlib.asynccontextmanager
async def scripted_gateway(script: Script) -> AsyncIterator[ScriptedGateway]:
    """Reads each hello, runs `script` on the first connection (it sends the welcome
    itself, so it can send more right behind it) and leaves later ones unanswered."""
    connection_numbers = itertools.count()
    close_codes: asyncio.Queue[int | None] = asyncio.Queue()

    async def handler(ws: ServerConnection) -> None:
        await ws.recv()  # the hello
        if next(connection_numbers) == 0:
            await script(ws)
        await ws.wait_closed()
        close_codes.put_nowait(ws.close_code)

    async with serve(
        handler, "127.0.0.1", 0, compression=None, ping_interval=None, max_size=None
    ) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        yield ScriptedGateway(f"ws://127.0.0.1:{port}/v1/agent/connect", close_codes)


@pytest.fixture
async def dispatcher(
    screen_worker: SerialWorker, a11y_worker: SerialWorker, input_worker: SerialWorker
) -> AsyncIterator[Dispatcher]:
    desktop = RecordingDesktop(SimDesktop())
    dispatcher = dispatcher_over(desktop, FakeApps(), screen_worker, a11y_worker, input_worker)
    yield dispatcher
    await dispatcher.close()


def link_to(url: str, dispatcher: Dispatcher, max_frame_bytes: int = MAX_FRAME_BYTES) -> AgentLink:
    return AgentLink(
        url,
        RIG_TOKEN,
        fake_hello(),
        dispatcher,
        backoff_initial_s=0.01,
        backoff_max_s=0.05,
        open_timeout_s=5.0,
        max_frame_bytes=max_frame_bytes,
    )


@contextlib.asynccontextmanager
async def running(link: AgentLink) -> AsyncIterator[None]:
    task = asyncio.create_task(link.run())
    try:
        yield
    finally:
        await link.stop()
        async with asyncio.timeout(10):
            await task


async def first_close_code(gateway: ScriptedGateway) -> int | None:
    async with asyncio.timeout(5):
        return await gateway.close_codes.get()


async def pongs(ws: ServerConnection, count: int) -> list[float]:
    """`sent_at` of the next `count` pongs from the agent."""
    answers: list[float] = []
    async with asyncio.timeout(5):
        while len(answers) < count:
            header, _ = decode_frame(await ws.recv())
            if header["t"] == "pong":
                answers.append(header["sent_at"])
    return answers


def ping(sent_at: float) -> str:
    return encode_text({"t": "ping", "sent_at": sent_at})


async def test_messages_sent_right_behind_the_welcome_are_handled_in_order(
    dispatcher: Dispatcher,
) -> None:
    answered: asyncio.Future[list[float]] = asyncio.get_running_loop().create_future()

    async def script(ws: ServerConnection) -> None:
        for message in (WELCOME, ping(1.0), ping(2.0), ping(3.0)):
            await ws.send(message)
        answered.set_result(await pongs(ws, 3))

    async with scripted_gateway(script) as gateway:
        link = link_to(gateway.url, dispatcher)
        async with running(link):
            async with asyncio.timeout(5):
                assert await answered == [1.0, 2.0, 3.0]


def test_the_link_runs_on_the_event_loop_the_agent_runs(
    screen_worker: SerialWorker, a11y_worker: SerialWorker, input_worker: SerialWorker
) -> None:
    """uvloop where it exists: its transports refuse some settings asyncio's accept (a
    write-buffer mark past a C int)."""

    async def ping_through_a_link() -> list[float]:
        desktop = RecordingDesktop(SimDesktop())
        dispatcher = dispatcher_over(desktop, FakeApps(), screen_worker, a11y_worker, input_worker)
        answered: asyncio.Future[list[float]] = asyncio.get_running_loop().create_future()

        async def script(ws: ServerConnection) -> None:
            await ws.send(WELCOME)
            await ws.send(ping(4.5))
            answered.set_result(await pongs(ws, 1))

        try:
            async with (
                scripted_gateway(script) as gateway,
                running(link_to(gateway.url, dispatcher)),
                asyncio.timeout(5),
            ):
                return await answered
        finally:
            await dispatcher.close()

    assert run_on_the_agents_loop(ping_through_a_link()) == [4.5]


async def test_fragmented_messages_arrive_whole(dispatcher: Dispatcher) -> None:
    answered: asyncio.Future[list[float]] = asyncio.get_running_loop().create_future()

    async def script(ws: ServerConnection) -> None:
        await ws.send(WELCOME)
        # A text message cut inside a two-byte character, and a binary one.
        await ws.send([b'{"t":"ping","sent_at":2.5,"x":"\xc3', b'\xa9"', b"}"], text=True)
        binary = encode_binary({"t": "ping", "sent_at": 3.5}, b"payload")
        await ws.send([binary[:3], binary[3:10], binary[10:]])
        answered.set_result(await pongs(ws, 2))

    async with scripted_gateway(script) as gateway:
        link = link_to(gateway.url, dispatcher)
        async with running(link):
            async with asyncio.timeout(5):
                assert await answered == [2.5, 3.5]


async def send_too_many_fragments(ws: ServerConnection) -> None:
    await ws.send(WELCOME)
    await ws.send([b"{"] + [b""] * TOO_MANY_FRAGMENTS + [b"}"], text=True)


async def send_too_large(ws: ServerConnection) -> None:
    await ws.send(WELCOME)
    await ws.send(encode_binary({"t": "ping", "sent_at": 1.0}, bytes(4096)))


async def send_welcome_not_utf8(ws: ServerConnection) -> None:
    await ws.send(b'{"t":"welcome","rig_id":"\xff"}', text=True)


async def send_not_utf8_after_the_welcome(ws: ServerConnection) -> None:
    await ws.send(WELCOME)
    await ws.send(b"\xff\xfe", text=True)


async def send_not_json_after_the_welcome(ws: ServerConnection) -> None:
    await ws.send(WELCOME)
    await ws.send(encode_binary({"t": "ping"}, b"")[:-1])  # header cut short


@pytest.mark.parametrize(
    ("script", "close_code"),
    [
        pytest.param(send_too_many_fragments, 1009, id="too-many-fragments"),
        pytest.param(send_too_large, 1009, id="over-max-frame-bytes"),
        pytest.param(send_welcome_not_utf8, 1007, id="welcome-not-utf8"),
        pytest.param(send_not_utf8_after_the_welcome, 1007, id="text-not-utf8"),
        pytest.param(send_not_json_after_the_welcome, 1007, id="binary-header-cut-short"),
    ],
)
async def test_what_cannot_be_read_closes_the_link_with_a_code_that_says_why(
    dispatcher: Dispatcher, script: Script, close_code: int
) -> None:
    async with scripted_gateway(script) as gateway:
        link = link_to(gateway.url, dispatcher, max_frame_bytes=1024)
        async with running(link):
            assert await first_close_code(gateway) == close_code


async def test_a_failure_handling_a_message_closes_the_link_with_1011_and_nothing_after_runs(
    dispatcher: Dispatcher, monkeypatch: pytest.MonkeyPatch
) -> None:
    heard_after: list[str | bytes] = []

    async def script(ws: ServerConnection) -> None:
        await ws.send(WELCOME)
        request = {"t": "req", "id": "g1", "op": "screen/dirty", "deadline_ms": 5000, "body": {}}
        await ws.send(encode_text(request))
        await ws.send(ping(1.0))
        with contextlib.suppress(Exception):
            async for message in ws:
                heard_after.append(message)

    async with scripted_gateway(script) as gateway:
        link = link_to(gateway.url, dispatcher)

        def failing(*_: object) -> None:
            raise RuntimeError("a bug in the link")

        monkeypatch.setattr(link, "_on_request", failing)
        async with running(link):
            assert await first_close_code(gateway) == 1011
    assert heard_after == []  # no pong: the link read nothing past the request


async def test_replaced_before_the_welcome_stops_the_link(dispatcher: Dispatcher) -> None:
    async with FakeGateway().running() as gateway:
        gateway.close_code = 4409
        link = link_to(gateway.url, dispatcher)
        with pytest.raises(LinkReplacedError, match="4409"):
            async with asyncio.timeout(5):
                await link.run()

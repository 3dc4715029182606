"""The `reduce_motion` option's lifecycle on the sim: animations off while a session is
live, restored on every way out (session end, link loss, agent stop)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import pytest

from rigway.agent.accessibility import AccessibilityService
from rigway.agent.backends.base import WalkBudget
from rigway.agent.backends.sim import SimDesktop
from rigway.agent.dispatch import Dispatcher
from rigway.agent.link import AgentLink
from rigway.agent.reduce_motion import MotionReducer
from rigway.agent.runner import AgentSettings, run_agent
from rigway.agent.safety import InputGuard
from rigway.agent.screen import ScreenService
from rigway.agent.worker import SerialWorker
from rigway.protocol import ops
from tests.agent.fake_gateway import AgentConnection, FakeGateway
from tests.agent.fakes import FakeApps, FakeDesktop

A_MOVE = {"type": "mouse_move", "x": 5, "y": 5}


@dataclass
class Running:
    gateway: FakeGateway
    connection: AgentConnection
    desktop: SimDesktop
    link: AgentLink
    stop: asyncio.Event
    agent: asyncio.Task[None]


@asynccontextmanager
async def running_agent(*, reduce_motion: bool) -> AsyncIterator[Running]:
    desktop = SimDesktop()
    stop = asyncio.Event()
    links: list[AgentLink] = []
    async with FakeGateway().running() as gateway:
        settings = AgentSettings(
            gateway_url=gateway.url,
            rig_token="rig-token",
            reduce_motion=reduce_motion,
        )
        agent = asyncio.create_task(
            run_agent(settings, desktop, stop=stop, apps=FakeApps(), on_link=links.append)
        )
        connection = await gateway.next_connection()
        async with asyncio.timeout(5):
            await links[0].wait_connected()
        try:
            yield Running(gateway, connection, desktop, links[0], stop, agent)
        finally:
            stop.set()
            async with asyncio.timeout(10):
                await agent


async def start_session(connection: AgentConnection, session_id: str = "s1") -> None:
    reply = await connection.request(ops.SESSION_START, {"session_id": session_id})
    assert reply.header["ok"], reply.header


def history(desktop: SimDesktop) -> tuple[bool, ...]:
    # Through a call: the type checker would take a property it saw as constant.
    return desktop.motion_history


def reducing(desktop: SimDesktop) -> bool:
    return desktop.reduces_motion


def engaged(motion: MotionReducer) -> bool:
    return motion.engaged


async def until_motion(desktop: SimDesktop, on: bool) -> None:
    await asyncio.to_thread(desktop.wait_reduce_motion, on)


async def test_animations_are_off_while_a_session_is_live_and_back_at_its_end() -> None:
    async with running_agent(reduce_motion=True) as run:
        assert history(run.desktop) == ()  # nothing before a session
        await start_session(run.connection)
        assert reducing(run.desktop)  # off before the start is answered

        reply = await run.connection.request(
            ops.SESSION_END, {"session_id": "s1", "reason": "client"}
        )

        assert reply.header["ok"]
        assert not reducing(run.desktop)
        assert history(run.desktop) == (True, False)


async def test_without_the_option_the_animations_are_left_alone() -> None:
    async with running_agent(reduce_motion=False) as run:
        await start_session(run.connection)
        await run.connection.request(ops.INPUT_BATCH, {"session_id": "s1", "events": [A_MOVE]})
        await run.connection.request(ops.SESSION_END, {"session_id": "s1", "reason": "client"})
    assert history(run.desktop) == ()


async def test_a_dropped_link_restores_and_the_next_batch_turns_them_off_again() -> None:
    async with running_agent(reduce_motion=True) as run:
        await start_session(run.connection)

        await run.connection.drop()
        await until_motion(run.desktop, False)

        # The link comes back within the grace: the session goes on, animations off
        # again with its next batch.
        connection = await run.gateway.next_connection()
        reply = await connection.request(ops.INPUT_BATCH, {"session_id": "s1", "events": [A_MOVE]})
        assert reply.header["ok"], reply.header
        assert reducing(run.desktop)
        assert history(run.desktop) == (True, False, True)


async def test_the_agent_stopping_restores_them() -> None:
    async with running_agent(reduce_motion=True) as run:
        await start_session(run.connection)
        assert history(run.desktop) == (True,)
        run.stop.set()
        async with asyncio.timeout(10):
            await run.agent
        assert not reducing(run.desktop)
        assert history(run.desktop) == (True, False)


class GuardThatFailsToLetGo(InputGuard):
    """A release that raises (a backend gone wrong beyond one key's failure)."""

    def release_all(self) -> list[str]:
        super().release_all()
        raise RuntimeError("the input backend went away")


@dataclass
class FailingRelease:
    desktop: FakeDesktop
    motion: MotionReducer
    dispatcher: Dispatcher


@pytest.fixture
async def failing_release(
    screen_worker: SerialWorker, a11y_worker: SerialWorker, input_worker: SerialWorker
) -> AsyncIterator[FailingRelease]:
    """A dispatcher that reduces motion, in a session with the animations off, whose
    input guard raises as it lets go."""
    desktop = FakeDesktop()
    motion = MotionReducer(desktop, enabled=True)
    dispatcher = Dispatcher(
        desktop,
        ScreenService(desktop, screen_worker),
        AccessibilityService(desktop, a11y_worker, WalkBudget()),
        GuardThatFailsToLetGo(desktop),
        FakeApps(),
        input_executor=input_worker,
        motion=motion,
    )
    try:
        await dispatcher.handle(ops.SESSION_START, {"session_id": "s1"})
        assert engaged(motion)
        yield FailingRelease(desktop, motion, dispatcher)
    finally:
        await dispatcher.close()


async def test_a_release_that_raises_when_the_link_drops_still_restores_them(
    failing_release: FailingRelease,
) -> None:
    desktop, motion, dispatcher = (
        failing_release.desktop,
        failing_release.motion,
        failing_release.dispatcher,
    )

    with pytest.raises(RuntimeError, match="went away"):
        await dispatcher.on_link_lost()

    assert not engaged(motion)
    assert desktop.calls.count(("reduce_motion", False)) == 1


async def test_a_release_that_raises_at_the_sessions_end_still_restores_them(
    failing_release: FailingRelease,
) -> None:
    desktop, motion, dispatcher = (
        failing_release.desktop,
        failing_release.motion,
        failing_release.dispatcher,
    )

    ended = await dispatcher.handle(ops.SESSION_END, {"session_id": "s1", "reason": "client"})

    # The rest of the restore ran: the answer came, nothing listed as released.
    assert ended[0]["released_inputs"] == []
    assert not engaged(motion)
    assert desktop.calls.count(("reduce_motion", False)) == 1


# -- MotionReducer on its own ---------------------------------------------------------------


class FailingMotion(FakeDesktop):
    def set_reduce_motion(self, on: bool) -> None:
        super().set_reduce_motion(on)
        raise RuntimeError("no settings manager today")


def test_engage_does_nothing_without_a_live_session() -> None:
    desktop = FakeDesktop()
    motion = MotionReducer(desktop, enabled=True)
    motion.engage()
    assert desktop.calls == []
    assert not motion.needs_engage


def test_an_engage_queued_behind_the_session_end_leaves_the_animations_alone() -> None:
    desktop = FakeDesktop()
    motion = MotionReducer(desktop, enabled=True)
    motion.session_started()
    motion.session_ended()  # on the loop, before the queued engage runs on the worker
    motion.engage()
    motion.restore()
    assert desktop.calls == []


def test_engage_and_restore_are_idempotent() -> None:
    desktop = FakeDesktop()
    motion = MotionReducer(desktop, enabled=True)
    motion.session_started()
    needed_before = motion.needs_engage
    motion.engage()
    motion.engage()
    assert needed_before
    assert not motion.needs_engage
    motion.restore()
    motion.restore()
    assert desktop.calls == [("reduce_motion", True), ("reduce_motion", False)]


def test_a_backend_that_fails_is_logged_and_the_session_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    desktop = FailingMotion()
    motion = MotionReducer(desktop, enabled=True)
    motion.session_started()
    motion.engage()
    motion.restore()  # still tried: the failed call may have changed something
    assert desktop.calls == [("reduce_motion", True), ("reduce_motion", False)]
    assert "could not turn the desktop's animations off" in caplog.text
    assert "could not restore the desktop's animations" in caplog.text

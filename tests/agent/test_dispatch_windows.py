"""Session end: only windows that the session's launched processes own are closed."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from rigway.agent.dispatch import Dispatcher
from rigway.agent.worker import SerialWorker
from rigway.protocol import ops
from tests.agent.assembly import dispatcher_over
from tests.agent.fakes import FakeApps, FakeDesktop

LOCAL_USER_PID = 77


class UnreadableOwners(FakeDesktop):
    def window_owners(self, window_ids: frozenset[int]) -> dict[int, int | None]:
        raise OSError("the X server went away")


async def _dispatcher(
    desktop: FakeDesktop, apps: FakeApps, screen_worker: SerialWorker, a11y_worker: SerialWorker
) -> Dispatcher:
    dispatcher = dispatcher_over(desktop, apps, screen_worker, a11y_worker)
    await dispatcher.handle(ops.SESSION_START, {"session_id": "s1", "mode": "desktop"})
    return dispatcher


@pytest.fixture
async def desktop(
    screen_worker: SerialWorker, a11y_worker: SerialWorker
) -> AsyncIterator[tuple[FakeDesktop, FakeApps, Dispatcher]]:
    fake, apps = FakeDesktop(), FakeApps()
    dispatcher = await _dispatcher(fake, apps, screen_worker, a11y_worker)
    yield fake, apps, dispatcher
    await dispatcher.close()


async def _launch(dispatcher: Dispatcher) -> int:
    reply, _ = await dispatcher.handle(
        ops.APP_LAUNCH, {"session_id": "s1", "path": "/bin/app", "args": []}
    )
    return int(reply["pid"])


async def _end(dispatcher: Dispatcher) -> dict[str, object]:
    reply, _ = await dispatcher.handle(ops.SESSION_END, {"session_id": "s1", "reason": "client"})
    return reply


async def test_only_windows_of_launched_processes_are_closed(
    desktop: tuple[FakeDesktop, FakeApps, Dispatcher],
) -> None:
    fake, _, dispatcher = desktop
    pid = await _launch(dispatcher)
    fake.open_window(10, pid)
    fake.open_window(11, LOCAL_USER_PID)  # a local user's window, opened meanwhile
    fake.open_window(12, None)  # owner unknown (a remote X client)

    reply = await _end(dispatcher)

    assert reply["killed_pids"] == [pid]
    # Attributed before the kill: FakeApps owns no pid any more once it has killed them.
    assert fake.closed_windows == [frozenset({10})]
    assert fake.windows == {1, 11, 12}


async def test_no_window_of_the_session_closes_nothing(
    desktop: tuple[FakeDesktop, FakeApps, Dispatcher],
) -> None:
    fake, _, dispatcher = desktop
    await _launch(dispatcher)
    fake.open_window(11, LOCAL_USER_PID)

    await _end(dispatcher)

    assert fake.closed_windows == []


async def test_owners_that_cannot_be_read_close_nothing_and_the_end_goes_on(
    screen_worker: SerialWorker, a11y_worker: SerialWorker
) -> None:
    fake, apps = UnreadableOwners(), FakeApps()
    dispatcher = await _dispatcher(fake, apps, screen_worker, a11y_worker)
    try:
        pid = await _launch(dispatcher)
        fake.open_window(10, pid)

        reply = await _end(dispatcher)

        assert reply["killed_pids"] == [pid]
        assert fake.closed_windows == []
        assert dispatcher.active_session_id is None
    finally:
        await dispatcher.close()

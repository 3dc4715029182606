"""Session end on a real desktop: the session's windows close, nobody else's do.

The dispatcher runs over the test desktop's backend with a real `ProcessTracker`; apps
launched through `apps` stand for a local user, who is not the session.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass

import psutil
import pytest

from rigway.agent.apps import ProcessTracker
from rigway.agent.backends.x11 import X11Desktop
from rigway.agent.backends.x11.windows import window_owner_pid, window_title
from rigway.agent.dispatch import Dispatcher
from rigway.agent.worker import SerialWorker
from rigway.protocol import ops
from tests.agent.assembly import dispatcher_over
from tests.support.x_desktop import LaunchedApps, XDesktop, wait_until

pytestmark = pytest.mark.x11

SESSION = "s1"
# Double fork and setsid: the window's owner is re-parented to init, outside the tree
# of the launched process (which exits at once). It keeps its X resources after its
# death (RetainPermanent), so its window outlives it until someone destroys it.
ESCAPEE = """
import os, time
from Xlib import X, display
if os.fork():
    os._exit(0)
os.setsid()
if os.fork():
    os._exit(0)
conn = display.Display()
window = conn.screen().root.create_window(0, 0, 240, 120, 0, conn.screen().root_depth)
window.set_wm_name("Escapee")
conn.set_close_down_mode(X.RetainPermanent)
window.map()
conn.sync()
time.sleep(600)  # stays alive, owning its window, until the test's teardown kills it
"""


@dataclass
class Session:
    dispatcher: Dispatcher
    tracker: ProcessTracker

    async def launch(self, path: str, *args: str) -> int:
        body = {"session_id": SESSION, "path": path, "args": list(args)}
        reply, _ = await self.dispatcher.handle(ops.APP_LAUNCH, body)
        return int(reply["pid"])

    async def end(self) -> None:
        body = {"session_id": SESSION, "reason": "client"}
        await self.dispatcher.handle(ops.SESSION_END, body)


@pytest.fixture
async def session(x11_backend: X11Desktop, x_desktop: XDesktop) -> AsyncIterator[Session]:
    screen_worker, a11y_worker = SerialWorker("test-screen"), SerialWorker("test-a11y")
    tracker = ProcessTracker(env=x_desktop.env)
    dispatcher = dispatcher_over(x11_backend, tracker, screen_worker, a11y_worker)
    await dispatcher.handle(ops.SESSION_START, {"session_id": SESSION, "mode": "desktop"})
    try:
        yield Session(dispatcher, tracker)
    finally:
        await Session(dispatcher, tracker).end()  # idempotent
        await dispatcher.close()
        for worker in (screen_worker, a11y_worker):
            worker.shutdown(wait=True, cancel_futures=True)


def _window_titled(desk: XDesktop, title: str) -> int | None:
    with desk.x_connection() as conn:
        return next((w for w in desk.client_windows() if window_title(conn, w) == title), None)


def _owner(desk: XDesktop, window_id: int) -> int:
    with desk.x_connection() as conn:
        pid = window_owner_pid(conn, window_id)
    assert pid is not None
    return pid


def _is_gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


async def test_a_window_a_local_user_opened_during_the_session_stays_open(
    session: Session, x_desktop: XDesktop, apps: LaunchedApps
) -> None:
    await session.launch("zenity", "--info", "--title=Launched", "--text=Mine")
    launched = wait_until(lambda: _window_titled(x_desktop, "Launched"), message="its window")
    user_app = apps.launch(["zenity", "--info", "--title=Local user", "--text=Not yours"])
    user_window = wait_until(lambda: _window_titled(x_desktop, "Local user"), message="window")

    await session.end()

    # The end waits for the windows it closes to go: what is still listed was left alone.
    assert user_window in x_desktop.client_windows()
    assert user_app.poll() is None
    assert wait_until(lambda: launched not in x_desktop.client_windows()) is True


async def test_a_window_that_outlives_its_escaped_owner_is_closed(
    session: Session, x_desktop: XDesktop
) -> None:
    launched = await session.launch(sys.executable, "-c", ESCAPEE)
    window = wait_until(lambda: _window_titled(x_desktop, "Escapee"), message="its window")
    owner = _owner(x_desktop, window)
    # A real escapee: neither the launched process nor in its session any more.
    assert owner != launched
    assert psutil.Process(owner).ppid() != launched
    assert os.getsid(owner) != launched

    await session.end()

    assert _is_gone(owner)
    assert wait_until(lambda: window not in x_desktop.client_windows()) is True

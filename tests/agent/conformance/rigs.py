"""One adapter per backend, so the conformance suite asks every platform the same
questions: where did the pointer go, what is held, what changed, what is open.

Each rig owns a `Desktop` and the `AppTracker` that backend runs with, and answers from
the platform's own view (the X server for x11, the sim's state, the fakes' record of
what Windows was asked for the windows backend), never from the backend's bookkeeping.
"""

from __future__ import annotations

from typing import Protocol

import psutil

from rigway.agent.apps import AppTracker, ProcessTracker
from rigway.agent.backends.base import AccessibilitySnapshot, Desktop, Rect, WalkBudget
from rigway.agent.backends.sim import SimDesktop
from rigway.agent.backends.sim import form as sim_form
from rigway.agent.backends.sim.app_windows import SimAppTracker
from rigway.agent.backends.x11 import X11Desktop
from tests.support.x_desktop import LaunchedApps, XDesktop, wait_until

APP_START_TIMEOUT_S = 15.0


class ConformanceRig(Protocol):
    @property
    def desktop(self) -> Desktop: ...

    @property
    def apps(self) -> AppTracker: ...

    def pointer(self) -> tuple[int, int]:
        """Where the platform has the pointer, in capture pixels."""
        ...

    def held_count(self) -> int:
        """Keys and buttons the platform sees down."""
        ...

    def change_screen(self) -> Rect:
        """Change what the screen shows; the rectangle that changed."""
        ...

    def show_password(self, secret: str) -> None:
        """A focused window whose password field holds `secret`."""
        ...

    def tree_command(self) -> tuple[str, list[str]]:
        """An app that starts a child of its own and keeps running."""
        ...

    def tree_members(self, pid: int) -> frozenset[int]:
        """The launched process and every process it started, once it has started one."""
        ...

    def running(self, pids: frozenset[int]) -> frozenset[int]:
        """Those of `pids` still running."""
        ...

    def open_window(self, *, launched: bool) -> tuple[int, int] | None:
        """Open a top-level window, through `apps` when `launched`, else as a local user
        would: (window id, owner pid); None when this backend opens no windows."""
        ...

    def is_window_open(self, window_id: int) -> bool: ...


# -- POSIX app trees (the sim's apps are real processes too) ------------------------------


class PosixProcesses:
    """The conformance questions about processes, answered by psutil."""

    def tree_command(self) -> tuple[str, list[str]]:
        return "sh", ["-c", "sleep 300 & exec sleep 301"]

    def tree_members(self, pid: int) -> frozenset[int]:
        def family() -> frozenset[int] | None:
            try:
                root = psutil.Process(pid)
                members = frozenset({pid, *(child.pid for child in root.children(recursive=True))})
            except psutil.NoSuchProcess:
                return None
            return members if len(members) > 1 else None

        return wait_until(family, timeout_s=APP_START_TIMEOUT_S, message=f"a child of {pid}")

    def running(self, pids: frozenset[int]) -> frozenset[int]:
        return frozenset(pid for pid in pids if _is_running(pid))


def _is_running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


# -- sim ----------------------------------------------------------------------------------


class SimRig(PosixProcesses):
    """The sim with its app tracker: a launched app opens a window on the sim."""

    def __init__(self) -> None:
        self.sim = SimDesktop(width=1280, height=800)
        self.processes = ProcessTracker()
        self.tracker = SimAppTracker(self.sim, self.processes)
        self.local_user = ProcessTracker()

    @property
    def desktop(self) -> Desktop:
        return self.sim

    @property
    def apps(self) -> AppTracker:
        return self.tracker

    def pointer(self) -> tuple[int, int]:
        return self.sim.pointer

    def held_count(self) -> int:
        return len(self.sim.pressed_keys) + len(self.sim.pressed_buttons)

    def change_screen(self) -> Rect:
        checkbox = self.sim.control_rect(sim_form.REMEMBER)
        self._click(checkbox)
        return checkbox

    def show_password(self, secret: str) -> None:
        self._click(self.sim.control_rect(sim_form.PASSWORD))
        self.sim.type_text(secret)

    def open_window(self, *, launched: bool) -> tuple[int, int] | None:
        before = self.sim.list_windows()
        if launched:
            pid = self.tracker.launch("sleep", ["300"])
        else:
            pid = self.local_user.launch("sleep", ["300"])
            self.sim.open_app_window(pid, "A local user's window")
        (window_id,) = self.sim.list_windows() - before
        return window_id, pid

    def is_window_open(self, window_id: int) -> bool:
        return window_id in self.sim.list_windows()

    def close(self) -> None:
        self.tracker.kill_all()
        self.local_user.kill_all()
        self.sim.close()

    def _click(self, rect: Rect) -> None:
        self.sim.move_pointer(rect.x + rect.w // 2, rect.y + rect.h // 2)
        self.sim.set_button("left", down=True)
        self.sim.set_button("left", down=False)


# -- x11 ----------------------------------------------------------------------------------


class X11Rig(PosixProcesses):
    """The x11 backend on a live Xvfb desktop, apps launched with that desktop's env."""

    _ROOT_COLOURS = ("#203040", "#405060")

    def __init__(self, x_desktop: XDesktop, backend: X11Desktop) -> None:
        self.x_desktop = x_desktop
        self.backend = backend
        self.tracker = ProcessTracker(env=x_desktop.env)
        self.local_user = LaunchedApps(x_desktop)
        self._colour = 0

    @property
    def desktop(self) -> Desktop:
        return self.backend

    @property
    def apps(self) -> AppTracker:
        return self.tracker

    def pointer(self) -> tuple[int, int]:
        with self.x_desktop.x_connection() as conn:
            reply = conn.screen().root.query_pointer()
        return int(reply.root_x), int(reply.root_y)

    def held_count(self) -> int:
        return len(self.x_desktop.held_keycodes()) + len(self.x_desktop.held_buttons())

    def change_screen(self) -> Rect:
        # The root window's background: nothing covers it on an empty desktop.
        self._colour = 1 - self._colour
        done = self.local_user.launch(["xsetroot", "-solid", self._ROOT_COLOURS[self._colour]])
        done.wait(timeout=APP_START_TIMEOUT_S)
        return Rect(0, 0, *self.backend.native_size())

    def show_password(self, secret: str) -> None:
        self.local_user.launch(["zenity", "--password", "--title=Conformance"])
        self._wait_for_focused_window("Conformance")
        self.backend.type_text(secret)

    def open_window(self, *, launched: bool) -> tuple[int, int] | None:
        before = self.backend.list_windows()
        title = f"Conformance {'launched' if launched else 'local'}"
        argv = ["zenity", "--info", f"--title={title}", "--text=A window"]
        if launched:
            pid = self.tracker.launch(argv[0], argv[1:])
        else:
            pid = self.local_user.launch(argv).pid

        def new_window() -> int | None:
            fresh = self.backend.list_windows() - before
            owned = self.backend.window_owners(frozenset(fresh))
            return next((w for w, owner in owned.items() if owner == pid), None)

        window = wait_until(new_window, timeout_s=APP_START_TIMEOUT_S, message=title)
        return window, pid

    def is_window_open(self, window_id: int) -> bool:
        return window_id in self.backend.list_windows()

    def close(self) -> None:
        self.tracker.kill_all()
        self.local_user.stop_all()
        self.x_desktop.release_everything()
        wait_until(lambda: self.x_desktop.client_windows() == [], message="an empty desktop")

    def _wait_for_focused_window(self, title: str) -> AccessibilitySnapshot:
        def probe() -> AccessibilitySnapshot | None:
            snap = self.backend.snapshot_accessibility(WalkBudget())
            is_ready = snap.window_title == title and any(e.focused for e in snap.elements)
            return snap if is_ready else None

        return wait_until(probe, timeout_s=APP_START_TIMEOUT_S, message=f"window {title!r}")

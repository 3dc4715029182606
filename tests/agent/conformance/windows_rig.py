"""The windows backend for the conformance suite: the real role logic over fakes of its
thin platform layer, on one fake machine.

The captured output is a secondary monitor left of the primary (negative origin), so a
coordinate that skipped the placement or the virtual-desktop normalisation would land
on the wrong pixel. The rig answers from what the fakes recorded of Windows: where
SendInput put the cursor, which keys Windows has down, which processes and windows the
fake machine still has.
"""

from __future__ import annotations

import itertools

from rigway.agent.apps import AppTracker
from rigway.agent.backends.base import Desktop, Rect
from rigway.agent.backends.windows.capture import open_screen_over
from rigway.agent.backends.windows.desktop import WindowsDesktop
from rigway.agent.backends.windows.desktop_state import WindowsDesktopState
from rigway.agent.backends.windows.displays import MonitorRecord
from rigway.agent.backends.windows.geometry import OutputPlacement, VirtualDesk
from rigway.agent.backends.windows.input import WindowsInput
from rigway.agent.backends.windows.jobs import JobAppTracker
from rigway.agent.backends.windows.roles import LocalInputRole
from rigway.agent.backends.windows.toplevel import TopLevelWindows
from rigway.agent.backends.windows.uia_walk import UiaAccessibility
from tests.agent.windows.fake_capture import FakeClock, FakeDuplication, FakeGdi
from tests.agent.windows.fake_input import FakeInputPort
from tests.agent.windows.fake_uia import FakeElement, FakePortFactory, FakeUiaPort, element
from tests.agent.windows.fake_win32 import FakeJobPort, FakeStatePort, FakeWin32, FakeWindowPort

# The output: 1280x800 at (-1280, 0); the primary, 1920x1080, sits at (0, 0).
OUTPUT = OutputPlacement(left=-1280, top=0, width=1280, height=800)
VIRTUAL_DESK = VirtualDesk(x=-1280, y=0, width=1280 + 1920, height=1080)
APP = "C:\\apps\\tool.exe"
CHANGE = Rect(100, 100, 50, 40)


class FakeDisplays:
    """The captured output at 150 % and the primary beside it, at 100 %."""

    def monitors(self) -> list[MonitorRecord]:
        return [
            MonitorRecord(OUTPUT.left, 0, 0, OUTPUT.height, dpi=144, primary=False),
            MonitorRecord(0, 0, 1920, 1080, dpi=96, primary=True),
        ]


class WindowsFakeRig:
    def __init__(self, *, local_input: LocalInputRole | None = None) -> None:
        self.machine = FakeWin32()
        self.duplication = FakeDuplication(OUTPUT.width, OUTPUT.height, left=OUTPUT.left)
        screen = open_screen_over(lambda: self.duplication, FakeGdi(self.duplication), FakeClock())
        self.input_port = FakeInputPort(desk=VIRTUAL_DESK)
        self.uia_port = FakeUiaPort(None)
        self.job_port = FakeJobPort(self.machine)
        self.tracker = JobAppTracker(self.job_port)
        self.state_port = FakeStatePort()
        self.windows_desktop = WindowsDesktop(
            screen=screen,
            input=WindowsInput(self.input_port, screen.placement),
            accessibility=UiaAccessibility(
                FakePortFactory(self.uia_port),
                screen.placement,
                lambda: (OUTPUT.width, OUTPUT.height),
            ),
            windows=TopLevelWindows(FakeWindowPort(self.machine), self.tracker.guard_context),
            state=WindowsDesktopState(self.state_port),
            displays=FakeDisplays(),
            local_input=local_input,
        )
        self._hwnds = itertools.count(0x10010, 4)
        self._colours = itertools.cycle(((0, 0, 255, 255), (0, 255, 0, 255)))

    @property
    def desktop(self) -> Desktop:
        return self.windows_desktop

    @property
    def apps(self) -> AppTracker:
        return self.tracker

    def pointer(self) -> tuple[int, int]:
        return OUTPUT.from_screen(*self.input_port.cursor)

    def held_count(self) -> int:
        return len(self.input_port.keys_down) + len(self.input_port.buttons_down)

    def change_screen(self) -> Rect:
        self.duplication.paint(CHANGE, next(self._colours))
        return CHANGE

    def show_password(self, secret: str) -> None:
        self.uia_port.root = _sign_in_window(secret)

    def tree_command(self) -> tuple[str, list[str]]:
        def start_a_child(pid: int) -> None:
            self.machine.spawn(pid, "child.exe")

        self.job_port.on_resume.append(start_a_child)
        return APP, ["--serve"]

    def tree_members(self, pid: int) -> frozenset[int]:
        children = {p.pid for p in self.machine.processes.values() if p.parent_pid == pid}
        return frozenset({pid, *children})

    def running(self, pids: frozenset[int]) -> frozenset[int]:
        return self.machine.alive(pids)

    def open_window(self, *, launched: bool) -> tuple[int, int] | None:
        if launched:
            pid = self.tracker.launch(APP, [])
        else:
            pid = self.machine.add_process("notepad.exe").pid  # the local user's
        hwnd = next(self._hwnds)
        # On the captured output (virtual-screen coordinates), as DWM reports it.
        self.machine.open_window(hwnd, pid, bounds=Rect(OUTPUT.left + 100, 120, 400, 300))
        return hwnd, pid

    def is_window_open(self, window_id: int) -> bool:
        return window_id in self.windows_desktop.list_windows()

    def close(self) -> None:
        self.tracker.kill_all()
        self.windows_desktop.close()


def _sign_in_window(secret: str) -> FakeElement:
    """A focused sign-in dialog inside the captured output (virtual-screen rects)."""
    left = OUTPUT.left + 200

    def at(x: int, y: int, w: int, h: int) -> tuple[int, int, int, int]:
        return left + x, y, w, h

    return element(
        "Window", at(0, 100, 400, 300), "Sign in",
        children=[
            element(
                "Edit", at(20, 140, 200, 24), "Username", keyboard_focusable=True,
                focused=True, value_available=True, value="alice",
            ),
            element(
                "Edit", at(20, 180, 200, 24), "Password", keyboard_focusable=True,
                is_password=True, value_available=True, value=secret,
            ),
            element("Button", at(20, 220, 80, 30), "Sign in", keyboard_focusable=True),
        ],
    )  # fmt: skip

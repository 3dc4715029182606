"""TopLevelWindows over fakes: which windows are listed, and who may be killed on close.

The guard context comes from a real JobAppTracker over the same fake machine, as the
agent composes them, so "launched by this session" means what it means at run time."""

from __future__ import annotations

import pytest

from rigway.agent.backends.base import Rect, StackedWindow
from rigway.agent.backends.windows.jobs import JobAppTracker
from rigway.agent.backends.windows.toplevel import CONSTANTS, MENU_CLASS, TopLevelWindows
from tests.agent.windows.fake_win32 import AGENT_PID, FakeJobPort, FakeWin32, FakeWindowPort

CLOSE_GRACE_S = 2.0
KILL_GRACE_S = 1.0
APP_WINDOW = 0x1000
TOOL = CONSTANTS["WS_EX_TOOLWINDOW"]


class Rig:
    """One fake machine with an app tracker and the windows role over it."""

    def __init__(self) -> None:
        self.machine = FakeWin32()
        self.tracker = JobAppTracker(FakeJobPort(self.machine), env={})
        self.port = FakeWindowPort(self.machine)
        self.windows = TopLevelWindows(
            self.port,
            self.tracker.guard_context,
            close_grace_s=CLOSE_GRACE_S,
            kill_grace_s=KILL_GRACE_S,
        )

    def launch_with_window(self, hwnd: int, **attrs: object) -> int:
        pid = self.tracker.launch("tool", [])
        self.port.open_window(hwnd, pid, **attrs)
        return pid


@pytest.fixture
def rig() -> Rig:
    return Rig()


# -- list and owners ---------------------------------------------------------------------


def test_visible_unowned_app_window_is_listed(rig: Rig) -> None:
    rig.launch_with_window(APP_WINDOW)

    assert rig.windows.list_windows() == {APP_WINDOW}


@pytest.mark.parametrize(
    "attrs",
    [
        {"visible": False},
        {"owner_hwnd": 0x2000},
        {"ex_style": TOOL},
        {"ex_style": TOOL | 0x8},
        {"cloaked": True},
    ],
    ids=["hidden", "owned", "tool window", "topmost tool window", "cloaked"],
)
def test_window_a_user_does_not_see_as_an_app_is_not_listed(
    rig: Rig, attrs: dict[str, object]
) -> None:
    rig.launch_with_window(APP_WINDOW, **attrs)

    assert rig.windows.list_windows() == frozenset()


def test_owners_are_read_for_the_asked_windows_still_open(rig: Rig) -> None:
    pid = rig.launch_with_window(APP_WINDOW)
    rig.port.open_window(0x2000, AGENT_PID)

    owners = rig.windows.window_owners(frozenset({APP_WINDOW, 0x3000}))

    assert owners == {APP_WINDOW: pid}


def test_owners_include_windows_that_are_not_listed(rig: Rig) -> None:
    pid = rig.launch_with_window(APP_WINDOW, visible=False)

    assert rig.windows.window_owners(frozenset({APP_WINDOW})) == {APP_WINDOW: pid}


# -- close -------------------------------------------------------------------------------


def test_window_that_closes_on_wm_close_leaves_its_owner_alone(rig: Rig) -> None:
    pid = rig.launch_with_window(APP_WINDOW, closes_on_wm_close=True)
    rig.machine.processes[pid].exits_when_windows_close = False

    rig.windows.close_windows(frozenset({APP_WINDOW}))

    assert ("post_close", APP_WINDOW) in rig.port.calls
    assert rig.machine.is_alive(pid)
    assert rig.port.waits == [CLOSE_GRACE_S]


def test_window_ignoring_wm_close_has_its_launched_owner_terminated(rig: Rig) -> None:
    pid = rig.launch_with_window(APP_WINDOW, closes_on_wm_close=False)

    rig.windows.close_windows(frozenset({APP_WINDOW}))

    assert not rig.machine.is_alive(pid)
    assert APP_WINDOW not in rig.machine.windows
    assert rig.port.waits == [CLOSE_GRACE_S, KILL_GRACE_S]


def test_owner_of_a_window_kept_open_is_not_terminated(rig: Rig) -> None:
    pid = rig.launch_with_window(APP_WINDOW, closes_on_wm_close=False)
    rig.port.open_window(0x2000, pid)

    rig.windows.close_windows(frozenset({APP_WINDOW}))

    assert rig.machine.is_alive(pid)
    assert ("terminate_pid", pid) not in rig.port.calls


def test_window_on_another_virtual_desktop_counts_as_kept(rig: Rig) -> None:
    pid = rig.launch_with_window(APP_WINDOW, closes_on_wm_close=False)
    rig.port.open_window(0x2000, pid, cloaked=True)

    rig.windows.close_windows(frozenset({APP_WINDOW}))

    assert rig.machine.is_alive(pid)


def test_owner_with_only_a_hidden_helper_window_left_is_terminated(rig: Rig) -> None:
    pid = rig.launch_with_window(APP_WINDOW, closes_on_wm_close=False)
    rig.port.open_window(0x2000, pid, visible=False)

    rig.windows.close_windows(frozenset({APP_WINDOW}))

    assert not rig.machine.is_alive(pid)


def test_owner_the_session_did_not_launch_is_not_terminated(rig: Rig) -> None:
    users_editor = rig.machine.add_process("editor.exe")
    rig.port.open_window(APP_WINDOW, users_editor.pid, closes_on_wm_close=False)

    rig.windows.close_windows(frozenset({APP_WINDOW}))

    assert rig.machine.is_alive(users_editor.pid)
    assert APP_WINDOW in rig.machine.windows


def test_protected_owner_is_not_terminated_even_when_launched(rig: Rig) -> None:
    pid = rig.tracker.launch("tool", [])
    shell = rig.machine.spawn(pid, "explorer.exe")
    rig.port.open_window(APP_WINDOW, shell.pid, closes_on_wm_close=False)

    rig.windows.close_windows(frozenset({APP_WINDOW}))

    assert rig.machine.is_alive(shell.pid)


def test_agents_own_window_never_gets_its_owner_terminated(rig: Rig) -> None:
    rig.port.open_window(APP_WINDOW, AGENT_PID, closes_on_wm_close=False)

    rig.windows.close_windows(frozenset({APP_WINDOW}))

    assert rig.machine.is_alive(AGENT_PID)


def test_tagged_survivor_of_the_kill_is_still_terminated(rig: Rig) -> None:
    pid = rig.tracker.launch("tool", [])
    survivor = rig.machine.spawn(pid, "escapee.exe", breaks_away=True)
    survivor.survives_termination = True
    rig.port.open_window(APP_WINDOW, survivor.pid, closes_on_wm_close=False)
    rig.tracker.kill_all()
    survivor.survives_termination = False

    rig.windows.close_windows(frozenset({APP_WINDOW}))

    assert not rig.machine.is_alive(survivor.pid)


def test_closing_windows_that_are_gone_posts_nothing(rig: Rig) -> None:
    rig.windows.close_windows(frozenset({APP_WINDOW}))

    assert rig.port.calls == []
    assert rig.port.waits == []


# -- the stack an app session crops to -----------------------------------------------------


def test_the_stack_lists_shown_windows_topmost_first_with_bounds_and_owners(rig: Rig) -> None:
    top = rig.launch_with_window(0x10, bounds=Rect(0, 0, 300, 200))
    dialog = rig.launch_with_window(0x20, bounds=Rect(50, 50, 200, 100), owner_hwnd=0x10)
    rig.port.open_window(0x30, AGENT_PID, bounds=Rect(-1920, 0, 800, 600))

    assert rig.windows.window_stack() == [
        StackedWindow(0x10, top, Rect(0, 0, 300, 200)),
        StackedWindow(0x20, dialog, Rect(50, 50, 200, 100)),  # owned: a window of its own
        StackedWindow(0x30, AGENT_PID, Rect(-1920, 0, 800, 600)),
    ]


@pytest.mark.parametrize(
    "attrs",
    [
        {"visible": False},
        {"minimised": True},
        {"cloaked": True},
        {"bounds": None},
        {"bounds": Rect(10, 10, 0, 40)},
    ],
)
def test_a_window_that_shows_nothing_is_not_stacked(rig: Rig, attrs: dict[str, object]) -> None:
    rig.launch_with_window(APP_WINDOW, **({"bounds": Rect(0, 0, 10, 10)} | attrs))

    assert rig.windows.window_stack() == []


@pytest.mark.parametrize("attrs", [{"ex_style": TOOL}, {"class_name": MENU_CLASS}])
def test_menus_and_tool_windows_are_popups(rig: Rig, attrs: dict[str, object]) -> None:
    rig.launch_with_window(APP_WINDOW, bounds=Rect(0, 0, 10, 10), **attrs)

    (stacked,) = rig.windows.window_stack()

    assert stacked.is_popup


def test_the_foreground_window_has_the_focus(rig: Rig) -> None:
    rig.launch_with_window(0x10, bounds=Rect(0, 0, 10, 10))
    rig.launch_with_window(0x20, bounds=Rect(0, 0, 10, 10), foreground=True)

    assert [w.has_focus for w in rig.windows.window_stack()] == [False, True]

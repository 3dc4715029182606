"""The owner's tray, pure part: what the icon, tooltip and menu show for each state, and
menu actions reaching the agent's side from the tray's own thread."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass, field

import pytest

from rigway.agent.backends.windows.tray import (
    ICON_SIZE_PX,
    AgentStatus,
    IconState,
    TrayAction,
    TrayController,
    TrayPresentation,
    draw_icon,
    icon_state,
    menu_entries,
    present,
    tooltip,
)

EVENT_TIMEOUT_S = 5.0
IDLE = AgentStatus(connected=True, session_live=False, api_access=True)
LIVE = AgentStatus(connected=True, session_live=True, api_access=True)
PAUSED = AgentStatus(connected=True, session_live=False, api_access=False)
UNKNOWN = AgentStatus(connected=True, session_live=False, api_access=None)
OFFLINE = AgentStatus(connected=False, session_live=False, api_access=None)


def _entry(status: AgentStatus, action: TrayAction) -> tuple[str, bool, bool]:
    entry = present(status).entry(action)
    return entry.label, entry.enabled, entry.visible


# ---- the model --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (IDLE, IconState.IDLE),
        (UNKNOWN, IconState.IDLE),
        (LIVE, IconState.LIVE),
        (PAUSED, IconState.PAUSED),
        (AgentStatus(connected=True, session_live=True, api_access=False), IconState.LIVE),
    ],
)
def test_icon_state_follows_session_then_pause(status: AgentStatus, expected: IconState) -> None:
    assert icon_state(status) is expected


def test_end_session_is_enabled_only_while_a_session_is_live() -> None:
    assert _entry(LIVE, TrayAction.END_SESSION) == ("End session", True, True)
    assert _entry(IDLE, TrayAction.END_SESSION) == ("End session", False, True)


def test_end_session_stays_enabled_with_the_link_down() -> None:
    # The owner's kill then ends the session on the rig.
    status = AgentStatus(connected=False, session_live=True)
    assert _entry(status, TrayAction.END_SESSION)[1] is True


def test_api_on_shows_pause_only() -> None:
    assert _entry(IDLE, TrayAction.PAUSE_API_ACCESS) == ("Pause API access", True, True)
    assert _entry(IDLE, TrayAction.RESUME_API_ACCESS)[2] is False


def test_api_paused_shows_resume_only() -> None:
    assert _entry(PAUSED, TrayAction.RESUME_API_ACCESS) == ("Resume API access", True, True)
    assert _entry(PAUSED, TrayAction.PAUSE_API_ACCESS)[2] is False


def test_unknown_api_access_shows_both() -> None:
    assert _entry(UNKNOWN, TrayAction.PAUSE_API_ACCESS)[2] is True
    assert _entry(UNKNOWN, TrayAction.RESUME_API_ACCESS)[2] is True


def test_api_toggles_are_disabled_without_the_gateway() -> None:
    assert _entry(OFFLINE, TrayAction.PAUSE_API_ACCESS)[1] is False
    assert _entry(OFFLINE, TrayAction.RESUME_API_ACCESS)[1] is False


def test_open_console_is_always_enabled() -> None:
    assert _entry(OFFLINE, TrayAction.OPEN_CONSOLE) == ("Open console", True, True)


def test_menu_lists_every_action_in_order() -> None:
    assert [entry.action for entry in menu_entries(IDLE)] == list(TrayAction)


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (IDLE, "Rigway: idle, API access on"),
        (UNKNOWN, "Rigway: idle"),
        (LIVE, "Rigway: a session is live on this desktop"),
        (PAUSED, "Rigway: API access paused"),
        (OFFLINE, "Rigway: idle (not connected to the gateway)"),
    ],
)
def test_tooltip_says_the_state(status: AgentStatus, expected: str) -> None:
    assert tooltip(status) == expected


def test_every_tooltip_fits_a_notification_icon() -> None:
    statuses = [
        AgentStatus(connected, live, access)
        for connected in (True, False)
        for live in (True, False)
        for access in (True, False, None)
    ]
    assert max(len(tooltip(status)) for status in statuses) < 128


def test_each_state_has_its_own_icon() -> None:
    images = {state: draw_icon(state).tobytes() for state in IconState}
    assert len(set(images.values())) == len(IconState)


def test_icon_is_square_with_transparent_corners() -> None:
    image = draw_icon(IconState.LIVE)
    assert image.size == (ICON_SIZE_PX, ICON_SIZE_PX)
    assert image.mode == "RGBA"
    assert image.getpixel((0, 0)) == (0, 0, 0, 0)


def test_live_icon_is_red_around_a_white_dot() -> None:
    image = draw_icon(IconState.LIVE)
    centre = ICON_SIZE_PX // 2
    assert image.getpixel((centre, centre)) == (255, 255, 255, 255)
    assert image.getpixel((centre, ICON_SIZE_PX // 8)) == (205, 40, 40, 255)


# ---- the controller ---------------------------------------------------------------


@dataclass
class FakeLink:
    is_connected: bool = True
    active_session_id: str | None = None


@dataclass
class FakeActions:
    """Records what the tray asked for, on which thread, and says when."""

    api_access: bool = True
    calls: list[tuple[str, bool | None]] = field(default_factory=list)
    threads: list[int] = field(default_factory=list)
    failure: Exception | None = None
    done: asyncio.Event = field(default_factory=asyncio.Event)

    def _record(self, name: str, value: bool | None = None) -> None:
        self.calls.append((name, value))
        self.threads.append(threading.get_ident())
        self.done.set()
        if self.failure is not None:
            raise self.failure

    async def end_session(self) -> None:
        self._record("end_session")

    async def set_api_access(self, enabled: bool | None) -> bool:
        self._record("set_api_access", enabled)
        if enabled is not None:
            self.api_access = enabled
        return self.api_access

    def open_console(self) -> None:
        self._record("open_console")


@dataclass
class FakeView:
    shown: list[TrayPresentation] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    stopped: bool = False

    def show(self, presentation: TrayPresentation) -> None:
        self.shown.append(presentation)

    def notify(self, message: str) -> None:
        self.notes.append(message)

    def stop(self) -> None:
        self.stopped = True


@dataclass
class Tray:
    controller: TrayController
    link: FakeLink
    actions: FakeActions
    view: FakeView


def _tray(link: FakeLink | None = None, actions: FakeActions | None = None) -> Tray:
    link = link or FakeLink()
    actions = actions or FakeActions()
    controller = TrayController(asyncio.get_running_loop(), link, actions)
    view = FakeView()
    controller.attach(view)
    return Tray(controller, link, actions, view)


def _choose_from_another_thread(controller: TrayController, action: TrayAction) -> int:
    tray_thread = threading.Thread(target=controller.on_menu, args=(action,))
    tray_thread.start()
    tray_thread.join()
    assert tray_thread.ident is not None
    return tray_thread.ident


async def _settled(tray: Tray) -> None:
    """After an action's call: let its task finish and refresh."""
    await asyncio.wait_for(tray.actions.done.wait(), EVENT_TIMEOUT_S)
    await asyncio.wait_for(tray.controller.settle(), EVENT_TIMEOUT_S)


async def test_end_session_from_the_tray_thread_runs_on_the_loop() -> None:
    tray = _tray(FakeLink(active_session_id="ses_1"))
    tray_thread = _choose_from_another_thread(tray.controller, TrayAction.END_SESSION)
    await _settled(tray)
    assert tray.actions.calls == [("end_session", None)]
    assert tray.actions.threads == [threading.get_ident()]
    assert tray_thread != threading.get_ident()


async def test_pause_from_the_tray_turns_api_access_off_and_shows_paused() -> None:
    tray = _tray()
    _choose_from_another_thread(tray.controller, TrayAction.PAUSE_API_ACCESS)
    await _settled(tray)
    assert tray.actions.calls == [("set_api_access", False)]
    assert tray.view.shown[-1].icon is IconState.PAUSED
    assert tray.view.shown[-1].entry(TrayAction.RESUME_API_ACCESS).visible


async def test_resume_from_the_tray_turns_api_access_on() -> None:
    tray = _tray(actions=FakeActions(api_access=False))
    _choose_from_another_thread(tray.controller, TrayAction.RESUME_API_ACCESS)
    await _settled(tray)
    assert tray.actions.calls == [("set_api_access", True)]
    assert tray.view.shown[-1].icon is IconState.IDLE


async def test_open_console_runs_off_the_loop() -> None:
    tray = _tray()
    _choose_from_another_thread(tray.controller, TrayAction.OPEN_CONSOLE)
    await _settled(tray)
    assert tray.actions.calls == [("open_console", None)]
    assert tray.actions.threads != [threading.get_ident()]


async def test_failed_action_is_told_to_the_owner() -> None:
    tray = _tray(actions=FakeActions(failure=RuntimeError("not connected to the gateway")))
    _choose_from_another_thread(tray.controller, TrayAction.PAUSE_API_ACCESS)
    await _settled(tray)
    assert tray.view.notes == ["Pause API access failed: not connected to the gateway"]


async def test_link_coming_up_reads_api_access() -> None:
    tray = _tray(actions=FakeActions(api_access=False))
    await tray.controller.tick()
    assert tray.actions.calls == [("set_api_access", None)]
    assert tray.view.shown[-1].icon is IconState.PAUSED


async def test_steady_link_does_not_read_again_before_due() -> None:
    tray = _tray()
    await tray.controller.tick()
    await tray.controller.tick()
    assert tray.actions.calls == [("set_api_access", None)]


async def test_link_down_forgets_api_access_and_says_not_connected() -> None:
    tray = _tray()
    await tray.controller.tick()
    tray.link.is_connected = False
    await tray.controller.tick()
    shown = tray.view.shown[-1]
    assert shown.tooltip.endswith("(not connected to the gateway)")
    assert shown.entry(TrayAction.PAUSE_API_ACCESS).visible
    assert shown.entry(TrayAction.RESUME_API_ACCESS).visible


async def test_session_starting_changes_the_icon() -> None:
    tray = _tray()
    await tray.controller.tick()
    tray.link.active_session_id = "ses_1"
    await tray.controller.tick()
    assert tray.view.shown[-1].icon is IconState.LIVE
    assert tray.view.shown[-1].entry(TrayAction.END_SESSION).enabled


async def test_unchanged_state_is_not_shown_again() -> None:
    tray = _tray()
    await tray.controller.tick()
    count = len(tray.view.shown)
    await tray.controller.tick()
    assert len(tray.view.shown) == count


async def test_run_returns_once_stopped() -> None:
    tray = _tray()
    stop = asyncio.Event()
    running = asyncio.create_task(tray.controller.run(stop, interval_s=3600))
    await asyncio.wait_for(tray.actions.done.wait(), EVENT_TIMEOUT_S)
    stop.set()
    await asyncio.wait_for(running, EVENT_TIMEOUT_S)
    assert tray.actions.calls == [("set_api_access", None)]


async def test_menu_choice_after_the_loop_closed_is_dropped() -> None:
    loop = asyncio.new_event_loop()
    controller = TrayController(loop, FakeLink(), FakeActions())
    loop.close()
    controller.on_menu(TrayAction.END_SESSION)  # must not raise on the tray thread

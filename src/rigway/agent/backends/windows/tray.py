"""The owner's tray icon on Windows: what it shows and what its menu does, as pure logic.

The person at the rig sees at a glance whether a session is live, and can end it, pause
or resume the rig's API access, or open the console, without going through the API:

    icon      idle · session live · API access paused (a live session outranks a pause)
    tooltip   the same in words, plus "not connected" while the gateway is unreachable
    menu      End session          the owner's kill (`session/owner_kill`); only while a
                                   session is live (it also works with the link down:
                                   the session then ends on the rig)
              Pause API access     the rig's `api_access_enabled` off / on
              Resume API access    (`rig/api_access`); the one that applies is shown,
                                   both while the state is not known yet
              Open console         the gateway's /console in the browser

`TrayController` lives on the agent's event loop. The binding (`_tray.py`, over
Shell_NotifyIconW; its Win32 side in `notify_icon.py`) calls `on_menu` from its own
thread, and the controller hands each action to the loop with
`loop.call_soon_threadsafe`; it pushes what to show through the `TrayView` port.
The agent's state is polled (`run`): the dispatcher has no change notification, and a
second's lag on a tray icon harms nobody.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
from dataclasses import dataclass
from typing import Protocol

from PIL import Image, ImageDraw

from rigway.agent.backends.windows.abi import AbiDeclarations

__all__ = [
    "ABI",
    "API_ACCESS_REREAD_S",
    "ICON_SIZE_PX",
    "POLL_INTERVAL_S",
    "WM_RBUTTONUP",
    "AgentStatus",
    "IconState",
    "LinkState",
    "MenuEntry",
    "OwnerActions",
    "TrayAction",
    "TrayController",
    "TrayPresentation",
    "TrayView",
    "draw_icon",
    "icon_state",
    "menu_entries",
    "present",
    "tooltip",
]

_log = logging.getLogger(__name__)

# The notification icon's callback carries the mouse message in lParam. The binding asks
# for version 4 callbacks and opens the menu on the WM_CONTEXTMENU that follows this
# release (`notify_icon.classify_message`), building it afresh just before it is shown.
WM_RBUTTONUP = 0x0205
ICON_SIZE_PX = 64
POLL_INTERVAL_S = 1.0
# The console can change API access too; the tray reads it again this often.
API_ACCESS_REREAD_S = 60.0


class IconState(enum.Enum):
    IDLE = "idle"
    LIVE = "live"
    PAUSED = "paused"


class TrayAction(enum.Enum):
    END_SESSION = "end_session"
    PAUSE_API_ACCESS = "pause_api_access"
    RESUME_API_ACCESS = "resume_api_access"
    OPEN_CONSOLE = "open_console"


_LABELS = {
    TrayAction.END_SESSION: "End session",
    TrayAction.PAUSE_API_ACCESS: "Pause API access",
    TrayAction.RESUME_API_ACCESS: "Resume API access",
    TrayAction.OPEN_CONSOLE: "Open console",
}


@dataclass(frozen=True, slots=True)
class AgentStatus:
    connected: bool
    session_live: bool
    api_access: bool | None = None  # None: not read since the link came up


@dataclass(frozen=True, slots=True)
class MenuEntry:
    action: TrayAction
    label: str
    enabled: bool
    visible: bool = True


@dataclass(frozen=True, slots=True)
class TrayPresentation:
    icon: IconState
    tooltip: str
    entries: tuple[MenuEntry, ...]

    def entry(self, action: TrayAction) -> MenuEntry:
        return next(entry for entry in self.entries if entry.action is action)


def icon_state(status: AgentStatus) -> IconState:
    if status.session_live:
        return IconState.LIVE
    if status.api_access is False:
        return IconState.PAUSED
    return IconState.IDLE


def tooltip(status: AgentStatus) -> str:
    """Under the 127 characters a notification icon's tip holds."""
    state = icon_state(status)
    if state is IconState.LIVE:
        text = "Rigway: a session is live on this desktop"
    elif state is IconState.PAUSED:
        text = "Rigway: API access paused"
    else:
        text = "Rigway: idle" + (", API access on" if status.api_access else "")
    return text if status.connected else text + " (not connected to the gateway)"


def menu_entries(status: AgentStatus) -> tuple[MenuEntry, ...]:
    return (
        MenuEntry(TrayAction.END_SESSION, _LABELS[TrayAction.END_SESSION], status.session_live),
        MenuEntry(
            TrayAction.PAUSE_API_ACCESS,
            _LABELS[TrayAction.PAUSE_API_ACCESS],
            enabled=status.connected,
            visible=status.api_access is not False,
        ),
        MenuEntry(
            TrayAction.RESUME_API_ACCESS,
            _LABELS[TrayAction.RESUME_API_ACCESS],
            enabled=status.connected,
            visible=status.api_access is not True,
        ),
        MenuEntry(TrayAction.OPEN_CONSOLE, _LABELS[TrayAction.OPEN_CONSOLE], enabled=True),
    )


def present(status: AgentStatus) -> TrayPresentation:
    return TrayPresentation(icon_state(status), tooltip(status), menu_entries(status))


_WHITE = (255, 255, 255, 255)
_COLOURS = {
    IconState.IDLE: (70, 110, 160, 255),
    IconState.LIVE: (205, 40, 40, 255),
    IconState.PAUSED: (225, 150, 25, 255),
}


def draw_icon(state: IconState, size_px: int = ICON_SIZE_PX) -> Image.Image:
    """The icon of `state`, drawn (no image files to ship): a disc in the state's
    colour, with a white dot while a session is live and pause bars while paused."""
    image = Image.new("RGBA", (size_px, size_px), (0, 0, 0, 0))
    draw = ImageDraw.Draw(image)
    margin = size_px // 16
    draw.ellipse((margin, margin, size_px - 1 - margin, size_px - 1 - margin), _COLOURS[state])
    centre = size_px // 2
    if state is IconState.LIVE:
        radius = size_px // 6
        draw.ellipse((centre - radius, centre - radius, centre + radius, centre + radius), _WHITE)
    elif state is IconState.PAUSED:
        bar_w, bar_h, gap = size_px // 8, size_px * 3 // 8, size_px // 8
        top = centre - bar_h // 2
        for left in (centre - gap // 2 - bar_w, centre + gap // 2):
            draw.rectangle((left, top, left + bar_w - 1, top + bar_h - 1), _WHITE)
    return image


class LinkState(Protocol):
    """What the tray reads of the agent's link (`AgentLink` has both)."""

    @property
    def is_connected(self) -> bool: ...

    @property
    def active_session_id(self) -> str | None: ...


class OwnerActions(Protocol):
    """The owner's actions, through the agent's link; failures raise with a message."""

    async def end_session(self) -> None: ...

    async def set_api_access(self, enabled: bool | None) -> bool:
        """Turn API access on or off (None: only read it); the state afterwards."""
        ...

    def open_console(self) -> None:
        """May block (starting a browser): called in a worker thread."""
        ...


class TrayView(Protocol):
    """The drawn tray; every method may be called from any thread."""

    def show(self, presentation: TrayPresentation) -> None: ...

    def notify(self, message: str) -> None: ...

    def stop(self) -> None: ...


class TrayController:
    """Keeps the view in step with the agent and carries out the menu's actions."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, link: LinkState, actions: OwnerActions
    ) -> None:
        self._loop = loop
        self._link = link
        self._actions = actions
        self._view: TrayView | None = None
        self._api_access: bool | None = None
        self._was_connected = False
        self._next_read_at: float | None = None
        self._shown: TrayPresentation | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.presentation = present(self._status())

    def attach(self, view: TrayView) -> None:
        """The view to keep current (the binding is built with `on_menu`, so after)."""
        self._view = view
        self._shown = None
        self.refresh()

    def on_menu(self, action: TrayAction) -> None:
        """Called on the tray's thread: the action runs on the event loop."""
        # A loop that closed meanwhile (the agent is exiting) has nothing left to do.
        with contextlib.suppress(RuntimeError):
            self._loop.call_soon_threadsafe(self._start, action)

    def refresh(self) -> None:
        """On the loop: show the agent's state now, if it changed."""
        self.presentation = present(self._status())
        if self._view is not None and self.presentation != self._shown:
            self._shown = self.presentation
            self._view.show(self.presentation)

    async def tick(self) -> None:
        """One poll: refresh, and read API access when the link came up or it is due."""
        connected = self._link.is_connected
        if not connected:
            self._api_access = None
        elif not self._was_connected or self._is_read_due():
            await self._read_api_access()
        self._was_connected = connected
        self.refresh()

    async def run(self, stop: asyncio.Event, interval_s: float = POLL_INTERVAL_S) -> None:
        """Poll until `stop` is set; then wait for actions still running."""
        while not stop.is_set():
            await self.tick()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), interval_s)
        await self.settle()

    async def settle(self) -> None:
        """Until the menu actions under way have finished."""
        while self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    def _status(self) -> AgentStatus:
        return AgentStatus(
            connected=self._link.is_connected,
            session_live=self._link.active_session_id is not None,
            api_access=self._api_access,
        )

    def _is_read_due(self) -> bool:
        return self._next_read_at is None or self._loop.time() >= self._next_read_at

    async def _read_api_access(self) -> None:
        self._next_read_at = self._loop.time() + API_ACCESS_REREAD_S
        try:
            self._api_access = await self._actions.set_api_access(None)
        except Exception as exc:  # an unknown state shows both items; not worth a popup
            _log.warning("the tray could not read the rig's API access: %s", exc)

    def _start(self, action: TrayAction) -> None:
        task = self._loop.create_task(self._perform(action))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _perform(self, action: TrayAction) -> None:
        try:
            if action is TrayAction.END_SESSION:
                await self._actions.end_session()
            elif action is TrayAction.PAUSE_API_ACCESS:
                self._api_access = await self._actions.set_api_access(False)
            elif action is TrayAction.RESUME_API_ACCESS:
                self._api_access = await self._actions.set_api_access(True)
            else:
                await asyncio.to_thread(self._actions.open_console)
        except Exception as exc:  # the owner hears of it; the agent carries on
            _log.warning("tray action %s failed: %s", action.value, exc)
            if self._view is not None:
                self._view.notify(f"{_LABELS[action]} failed: {exc}")
        finally:
            self.refresh()


ABI = AbiDeclarations(constants={"WM_RBUTTONUP": WM_RBUTTONUP}, headers=("windows.h",))

"""The sim's app windows: what a launched app shows on the sim desktop.

An app launched through `SimAppTracker` is a real process (so killing it, and the
session's restore, work as anywhere) that also opens one window on the `SimDesktop`
it was given, owned by its pid: a title bar, a body of its own colour and one "OK"
button. The desktop draws app windows over its sign-in window, topmost last; a click
raises the window it lands on. That is enough for an app session (`mode: "app"`) to
run end to end on the sim: a window to crop to, others to black out, a control to
list and click.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Protocol

import numpy as np

from rigway.agent.apps import AppTracker
from rigway.agent.backends.base import AccessibleElement, Pixels, Rect
from rigway.agent.backends.sim import widgets

__all__ = [
    "APP_WINDOW_H",
    "APP_WINDOW_W",
    "FIRST_APP_WINDOW_ID",
    "MIN_APP_WINDOW",
    "AppWindow",
    "SimAppTracker",
    "blit",
    "ok_button",
    "paint_app_window",
]

FIRST_APP_WINDOW_ID: Final = 100
APP_WINDOW_W: Final = 480
APP_WINDOW_H: Final = 320
# Where the first app window opens; each next one 40 px down and right of it.
_CASCADE_ORIGIN: Final = (80, 60)
_CASCADE_STEP: Final = 40
# The smallest app window: room for the title bar and the button.
MIN_APP_WINDOW: Final = (120, 90)


def ok_button(width: int, height: int) -> Rect:
    """The button, relative to the window's top-left corner: its bottom-right."""
    return Rect(width - 100, height - 40, 90, 30)


# Body colours, one per window in turn: distinct from each other and from the desktop.
_BODIES: Final = (
    (40, 180, 240, 255),
    (200, 120, 220, 255),
    (90, 200, 90, 255),
    (230, 200, 60, 255),
)


@dataclass(slots=True)
class AppWindow:
    window_id: int
    pid: int
    title: str
    rect: Rect
    pixels: Pixels

    def element(self) -> AccessibleElement:
        button = ok_button(self.rect.w, self.rect.h)
        return AccessibleElement(
            key=f"sim:app:{self.window_id}:ok",
            role="push button",
            name="OK",
            x=self.rect.x + button.x,
            y=self.rect.y + button.y,
            w=button.w,
            h=button.h,
        )


def paint_app_window(title: str, width: int, height: int, body: widgets.Colour) -> Pixels:
    pixels: Pixels = np.empty((height, width, 4), dtype=np.uint8)
    widgets.fill(pixels, Rect(0, 0, width, height), body)
    widgets.frame(pixels, Rect(0, 0, width, height), widgets.WINDOW_BORDER_BGRA)
    widgets.fill(pixels, Rect(0, 0, width, 28), widgets.TITLE_BAR_BGRA)
    widgets.draw_text(pixels, 10, 9, title, widgets.TITLE_TEXT_BGRA, width - 20)
    button = ok_button(width, height)
    widgets.fill(pixels, button, widgets.BUTTON_BGRA)
    widgets.frame(pixels, button, widgets.BORDER_BGRA)
    widgets.draw_text(pixels, button.x + 39, button.y + 10, "OK", widgets.TEXT_BGRA, 20)
    return pixels


def blit(canvas: Pixels, pixels: Pixels, x: int, y: int) -> None:
    """Draw `pixels` with its top-left at (x, y), clipped to the canvas."""
    height, width = pixels.shape[:2]
    canvas_h, canvas_w = canvas.shape[:2]
    left, top = max(x, 0), max(y, 0)
    right, bottom = min(x + width, canvas_w), min(y + height, canvas_h)
    if right <= left or bottom <= top:
        return
    canvas[top:bottom, left:right] = pixels[top - y : bottom - y, left - x : right - x]


class AppWindowHost(Protocol):
    """What `SimAppTracker` needs of the sim desktop."""

    def open_app_window(self, pid: int, title: str, rect: Rect | None = None) -> int: ...

    def close_app_windows_of(self, pids: Sequence[int]) -> None: ...


class AppWindowFactory:
    """Window ids, cascaded places and body colours for the windows apps open."""

    def __init__(self) -> None:
        self._ids = itertools.count(FIRST_APP_WINDOW_ID)
        self._opened = itertools.count()

    def make(self, pid: int, title: str, rect: Rect | None) -> AppWindow:
        window_id = next(self._ids)
        turn = next(self._opened)
        if rect is None:
            step = (turn % 8) * _CASCADE_STEP
            x, y = _CASCADE_ORIGIN[0] + step, _CASCADE_ORIGIN[1] + step
            rect = Rect(x, y, APP_WINDOW_W, APP_WINDOW_H)
        if rect.w < MIN_APP_WINDOW[0] or rect.h < MIN_APP_WINDOW[1]:
            raise ValueError(f"an app window is at least {MIN_APP_WINDOW[0]}x{MIN_APP_WINDOW[1]}")
        pixels = paint_app_window(title, rect.w, rect.h, _BODIES[turn % len(_BODIES)])
        return AppWindow(window_id, pid, title, rect, pixels)


class SimAppTracker:
    """An `AppTracker` for the sim: launches through `inner` (real processes), and each
    launch opens a window on `desktop` owned by its pid; killed apps' windows close."""

    def __init__(self, desktop: AppWindowHost, inner: AppTracker) -> None:
        self._desktop = desktop
        self._inner = inner

    @property
    def launched_pids(self) -> list[int]:
        return self._inner.launched_pids

    def launch(self, path: str, args: Sequence[str]) -> int:
        pid = self._inner.launch(path, args)
        self._desktop.open_app_window(pid, f"{path} ({pid})")
        return pid

    def kill(self, pid: int | None) -> list[int]:
        killed = self._inner.kill(pid)
        self._desktop.close_app_windows_of(killed)
        return killed

    def kill_all(self) -> list[int]:
        killed = self._inner.kill_all()
        self._desktop.close_app_windows_of(killed)
        return killed

    def owned_pids(self) -> frozenset[int]:
        return self._inner.owned_pids()

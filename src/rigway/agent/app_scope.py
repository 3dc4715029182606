"""Sessions scoped to an app (`mode: "app"`): what such a session may see and touch.

The session's view is its app window: the frontmost window on screen owned by a
process the session launched (`AppTracker.owned_pids`: launched trees and their tagged
escapees), menus and other popups aside. Screen reads cover that window's rectangle,
clipped to the capture, in native coordinates; every part of it that a window of
another process covers (a window higher in the stacking order whose owner is not the
session's, or unknown) is painted black before anything leaves the host. Targets come
only from a walk of the session's own window, and only those whose centre shows.
Pointer events must land on a part of the window that shows.

Errors:

    NoAppWindowError      no window of the session's apps is on screen (yet)
    OutsideAppWindowError a region or a pointer event that does not lie on the shown
                          part of the app window; the message names the window's rect

Window stacking and geometry come from the backend (`Desktop.window_stack`), read on
whichever worker asks; which pids are the session's is read from the app tracker, a
scan of the process table, so it is remembered and read again only when a window of an
unknown pid shows up, or once it is `OWNERS_MAX_AGE_S` old.

A capture reads the stack before and after its grab (`AppScope.grab`): a window that
moved in between is covered where it was and where it is, and a grab during which the
app window itself moved or resized is taken again.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from rigway.agent.apps import AppTracker
from rigway.agent.backends.base import (
    AccessibilitySnapshot,
    Desktop,
    Pixels,
    Rect,
    StackedWindow,
)
from rigway.agent.imaging import Mark
from rigway.protocol import ops

__all__ = [
    "BLACK_BGRA",
    "OWNERS_MAX_AGE_S",
    "AppScope",
    "AppView",
    "NoAppWindowError",
    "OutsideAppWindowError",
    "check_key_events",
    "check_pointer_events",
    "check_region",
    "clip_rects",
    "find_app_view",
    "intersect",
    "scoped_pixels",
    "scoped_snapshot",
    "shifted_marks",
]

BLACK_BGRA = (0, 0, 0, 255)
# How long the set of the session's pids is trusted when no unknown pid shows up.
OWNERS_MAX_AGE_S = 5.0
# A grab whose app window moved while it ran is taken again at most this many times.
MAX_REGRABS = 3

NO_APP_WINDOW_DETAIL = "the session's apps have no window on screen; launch one first"


class NoAppWindowError(Exception):
    """No window of the session's apps is on screen."""

    def __init__(self) -> None:
        super().__init__(NO_APP_WINDOW_DETAIL)


class OutsideAppWindowError(ValueError):
    """A region or point that does not lie on the shown part of the app window."""


@dataclass(frozen=True, slots=True)
class AppView:
    """What an app session sees: its window (clipped to the capture) and the parts of it
    other processes' windows cover, each clipped to the window; whether keys go to one
    of the session's windows (None: the backend cannot tell)."""

    window: Rect
    hidden: tuple[Rect, ...] = ()
    keys_to_app: bool | None = None

    def as_list(self) -> tuple[int, int, int, int]:
        return self.window.as_list()

    def shows(self, x: int, y: int) -> bool:
        """Whether the native point lies on a shown pixel of the window."""
        return _contains(self.window, x, y) and not any(_contains(r, x, y) for r in self.hidden)

    def covers(self, region: Rect) -> bool:
        return (
            region.x >= self.window.x
            and region.y >= self.window.y
            and region.x + region.w <= self.window.x + self.window.w
            and region.y + region.h <= self.window.y + self.window.h
        )

    def describe(self) -> str:
        x, y, w, h = self.window.as_list()
        return f"[{x},{y},{w},{h}]"


def _contains(rect: Rect, x: int, y: int) -> bool:
    return rect.x <= x < rect.x + rect.w and rect.y <= y < rect.y + rect.h


def intersect(a: Rect, b: Rect) -> Rect | None:
    left, top = max(a.x, b.x), max(a.y, b.y)
    right, bottom = min(a.x + a.w, b.x + b.w), min(a.y + a.h, b.y + b.h)
    if right <= left or bottom <= top:
        return None
    return Rect(left, top, right - left, bottom - top)


def find_app_view(
    stack: Sequence[StackedWindow], owned: frozenset[int], width: int, height: int
) -> AppView | None:
    """The view from a stack (topmost first): the topmost non-popup window of an owned
    pid that shows on the capture, and what windows of other pids above it cover."""
    capture = Rect(0, 0, width, height)
    for index, candidate in enumerate(stack):
        if candidate.is_popup or not _is_owned(candidate, owned):
            continue
        window = intersect(candidate.rect, capture)
        if window is None:
            continue
        hidden = [
            part
            for above in stack[:index]
            if not _is_owned(above, owned) and (part := intersect(above.rect, window)) is not None
        ]
        focused = next((w for w in stack if w.has_focus), None)
        keys_to_app = None if focused is None else _is_owned(focused, owned)
        return AppView(window, tuple(hidden), keys_to_app)
    return None


def _is_owned(window: StackedWindow, owned: frozenset[int]) -> bool:
    return window.pid is not None and window.pid in owned


def merged_view(first: AppView, second: AppView) -> AppView:
    """One view for pixels grabbed between two stack reads with the same window: what
    either read saw covered stays covered."""
    hidden = dict.fromkeys(first.hidden)
    for rect in second.hidden:
        part = intersect(rect, first.window)
        if part is not None:
            hidden.setdefault(part)
    return AppView(first.window, tuple(hidden), first.keys_to_app)


def scoped_pixels(frame: Pixels, view: AppView, region: Rect | None = None) -> Pixels:
    """A copy of `region` (default: the window) of a full-capture frame, with every
    hidden part painted black. `region` must lie inside the window."""
    area = view.window if region is None else region
    out = frame[area.y : area.y + area.h, area.x : area.x + area.w].copy()
    for rect in view.hidden:
        part = intersect(rect, area)
        if part is not None:
            top, left = part.y - area.y, part.x - area.x
            out[top : top + part.h, left : left + part.w] = BLACK_BGRA
    return out


def shifted_marks(marks: Sequence[Mark], area: Rect) -> tuple[Mark, ...]:
    """Marks in the coordinates of a crop whose top-left is `area`'s."""
    return tuple(dataclasses.replace(m, x=m.x - area.x, y=m.y - area.y) for m in marks)


def clip_rects(
    rects: Iterable[tuple[int, int, int, int]], view: AppView
) -> list[tuple[int, int, int, int]]:
    """Changed rectangles as an app session may see them: inside its window only."""
    clipped = []
    for rect in rects:
        part = intersect(Rect(*rect), view.window)
        if part is not None:
            clipped.append(part.as_list())
    return clipped


def scoped_snapshot(
    snapshot: AccessibilitySnapshot, view: AppView, owned: frozenset[int]
) -> AccessibilitySnapshot:
    """The walk as an app session may see it: nothing (not even the title) unless the
    walked window is one of the session's, and then only controls whose centre shows."""
    if snapshot.window_pid is None or snapshot.window_pid not in owned:
        return AccessibilitySnapshot("", "", [], truncated=False, window_pid=None)
    elements = [e for e in snapshot.elements if view.shows(e.x + e.w // 2, e.y + e.h // 2)]
    return dataclasses.replace(snapshot, elements=elements)


class AppScope:
    """The scope of one app session: its view, read afresh each time it is asked."""

    def __init__(
        self,
        desktop: Desktop,
        apps: AppTracker,
        *,
        clock: Callable[[], float] = time.monotonic,
        owners_max_age_s: float = OWNERS_MAX_AGE_S,
    ) -> None:
        self._desktop = desktop
        self._apps = apps
        self._clock = clock
        self._max_age_s = owners_max_age_s
        self._lock = threading.Lock()
        self._owned: frozenset[int] = frozenset()
        self._foreign: set[int] = set()
        self._read_at: float | None = None

    def owned_pids(self, seen: Iterable[int | None] = ()) -> frozenset[int]:
        """The session's pids; read again when one of `seen` is not known either way."""
        seen = tuple(seen)
        with self._lock:
            now = self._clock()
            unknown = any(
                pid is not None and pid not in self._owned and pid not in self._foreign
                for pid in seen
            )
            if self._read_at is None or unknown or now - self._read_at >= self._max_age_s:
                self._owned = self._apps.owned_pids()
                # Kept across reads: the walk asks about one pid, the stack about all.
                known = self._foreign.union(p for p in seen if p is not None)
                self._foreign = known - self._owned
                self._read_at = now
            return self._owned

    def view(self) -> AppView | None:
        """The view now (any thread: a few calls into the window system)."""
        stack = self._desktop.window_stack()
        owned = self.owned_pids(w.pid for w in stack)
        width, height = self._desktop.native_size()
        return find_app_view(stack, owned, width, height)

    def require_view(self) -> AppView:
        view = self.view()
        if view is None:
            raise NoAppWindowError()
        return view

    def scope_snapshot(
        self, snapshot: AccessibilitySnapshot
    ) -> tuple[AccessibilitySnapshot, AppView]:
        """`scoped_snapshot` for the view now, and that view; raises NoAppWindowError
        without one."""
        view = self.require_view()
        seen = () if snapshot.window_pid is None else (snapshot.window_pid,)
        return scoped_snapshot(snapshot, view, self.owned_pids(seen)), view

    def grab(self, grab: Callable[[], Pixels]) -> tuple[Pixels, AppView]:
        """A full-capture grab and the view its pixels may show: the stack read before
        and after it, merged (see the module docstring). Raises NoAppWindowError."""
        before = self.require_view()
        for _ in range(MAX_REGRABS):
            frame = grab()
            after = self.require_view()
            if after.window == before.window:
                return frame, merged_view(before, after)
            before = after
        # Still moving: nothing of this grab can be trusted to match a rect.
        raise NoAppWindowError()


def check_region(view: AppView, region: Rect | None) -> None:
    if region is not None and not view.covers(region):
        raise OutsideAppWindowError(
            f"region {region.x},{region.y} {region.w}x{region.h} lies outside the app "
            f"window {view.describe()}"
        )


def check_pointer_events(
    view: AppView, events: Sequence[ops.InputEvent], last_point: tuple[int, int] | None
) -> None:
    """Refuse a batch (before anything of it runs) with a pointer event that would act
    where the app window does not show: outside it, over another process's window, or
    at a pointer position that is not known to be on it. A target-bound event acts at
    a control of the session's own window (the walk is scoped) and passes."""
    point = last_point
    for index, event in enumerate(events):
        if event.type not in _POINTER_TYPES:
            continue
        if event.target is not None:
            point = None  # wherever the control is: known only when the event runs
            continue
        if event.x is not None and event.y is not None:
            point = (event.x, event.y)
        elif point is None:
            raise OutsideAppWindowError(
                f"event {index} ({event.type}) gives no x,y and the pointer may be "
                f"outside the app window {view.describe()}: give x,y"
            )
        if not view.shows(*point):
            raise OutsideAppWindowError(
                f"event {index} ({event.type}) at {point[0]},{point[1]} lies outside the "
                f"app window {view.describe()} or on a window over it"
            )


def check_key_events(view: AppView, events: Sequence[ops.InputEvent]) -> None:
    """Refuse a batch whose keys would go to another process's window: the focus is
    known to be elsewhere and no press on the app window comes before them (a press
    passed `check_pointer_events`, so it lands on the window and focuses it)."""
    if view.keys_to_app is not False:
        return
    for index, event in enumerate(events):
        if event.type in _PRESS_TYPES:
            return
        if event.type in _KEY_TYPES:
            raise OutsideAppWindowError(
                f"event {index} ({event.type}): the keyboard focus is on another window, "
                f"not the app window {view.describe()}; click the app window first"
            )


_POINTER_TYPES = frozenset({"mouse_move", "mouse_click", "mouse_down", "mouse_up", "mouse_scroll"})
_PRESS_TYPES = frozenset({"mouse_click", "mouse_down"})
_KEY_TYPES = frozenset({"key_press", "key_down", "key_up", "type_text"})

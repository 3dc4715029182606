"""Fakes for the agent core's tests: a scriptable desktop, a recording wrapper around
the sim, and an app tracker that starts no process."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from rigway.agent.apps import LaunchError, UnknownAppError
from rigway.agent.backends.base import (
    AccessibilitySnapshot,
    AccessibleElement,
    Desktop,
    DesktopState,
    Display,
    MouseButton,
    Pixels,
    Rect,
    StackedWindow,
    WalkBudget,
)


class FakeDesktop:
    """A small solid desktop whose damage, elements and failures the test scripts."""

    capture_mode = "fake"

    def __init__(self, width: int = 320, height: int = 200, *, has_damage: bool = True) -> None:
        self.has_damage = has_damage
        self.size = (width, height)
        self.pixels: Pixels = np.full((height, width, 4), 200, dtype=np.uint8)
        self.pending_damage: list[Rect] = []
        self.elements: list[AccessibleElement] = []
        self.walk_truncated = False
        self.calls: list[tuple[object, ...]] = []
        self.grab_count = 0
        self.walk_count = 0
        self.fail_keys: set[str] = set()
        self.fail_releases: set[str] = set()
        # Set: walks block until the test opens the gate (single-flight tests).
        self.walk_gate: threading.Event | None = None
        self.walk_started = threading.Event()
        self.key_pressed = threading.Event()
        self.windows: set[int] = {1}
        # Owner pid of a window (absent: unknown); `open_window` sets both.
        self.window_pids: dict[int, int] = {}
        self.closed_windows: list[frozenset[int]] = []
        # What `window_stack` answers, topmost first, and the process of the window the
        # walk reads (an app session's tests set them).
        self.stacked_windows: list[StackedWindow] = []
        self.window_pid: int | None = None
        # What `desktop_state` answers (or raises, against the contract: a broken
        # backend), and how often it was asked, for tests that wait on the sampling.
        self.state: DesktopState = "normal"
        self.state_error: Exception | None = None
        self._state_reads = 0
        self._state_read = threading.Condition()
        # What `last_local_input` answers: the owner's last input (monotonic seconds).
        self.local_input_at: float | None = None

    def set_desktop_state(self, state: DesktopState) -> None:
        self.state = state

    @property
    def state_reads(self) -> int:
        with self._state_read:
            return self._state_reads

    def wait_state_reads(self, count: int, timeout_s: float = 5.0) -> None:
        """Until `desktop_state` has been asked `count` times in all."""
        with self._state_read:
            if not self._state_read.wait_for(lambda: self._state_reads >= count, timeout_s):
                raise TimeoutError(f"desktop_state read {self._state_reads} times, not {count}")

    def open_window(self, window_id: int, owner_pid: int | None) -> None:
        self.windows.add(window_id)
        if owner_pid is not None:
            self.window_pids[window_id] = owner_pid

    def damage(self, *rects: Rect) -> None:
        self.pending_damage.extend(rects)

    def native_size(self) -> tuple[int, int]:
        return self.size

    def grab(self) -> Pixels:
        self.grab_count += 1
        return self.pixels.copy()

    def poll_damage(self) -> list[Rect]:
        taken, self.pending_damage = self.pending_damage, []
        return taken

    def move_pointer(self, x: int, y: int) -> None:
        self.calls.append(("move", x, y))

    def set_button(self, button: MouseButton, down: bool) -> None:
        if not down and f"button:{button}" in self.fail_releases:
            raise OSError(f"cannot release {button}")
        self.calls.append(("button", button, down))

    def scroll(self, dx: int, dy: int) -> None:
        self.calls.append(("scroll", dx, dy))

    def set_key(self, key: str, down: bool) -> None:
        if down and key in self.fail_keys:
            raise OSError(f"cannot press {key}")
        if not down and key in self.fail_releases:
            raise OSError(f"cannot release {key}")
        self.calls.append(("key", key, down))
        if down:
            self.key_pressed.set()

    def type_text(self, text: str) -> None:
        self.calls.append(("type", text))

    def snapshot_accessibility(self, budget: WalkBudget) -> AccessibilitySnapshot:
        self.walk_count += 1
        self.walk_started.set()
        if self.walk_gate is not None and not self.walk_gate.wait(5.0):
            raise TimeoutError("test never opened the walk gate")
        return AccessibilitySnapshot(
            window_title="Fake window",
            window_role="frame",
            elements=list(self.elements),
            truncated=self.walk_truncated,
            window_pid=self.window_pid,
        )

    def list_windows(self) -> frozenset[int]:
        return frozenset(self.windows)

    def window_owners(self, window_ids: frozenset[int]) -> dict[int, int | None]:
        return {w: self.window_pids.get(w) for w in self.windows & window_ids}

    def close_windows(self, window_ids: frozenset[int]) -> None:
        self.closed_windows.append(window_ids)
        self.windows -= window_ids

    def window_stack(self) -> list[StackedWindow]:
        return list(self.stacked_windows)

    def desktop_state(self) -> DesktopState:
        with self._state_read:
            self._state_reads += 1
            self._state_read.notify_all()
        if self.state_error is not None:
            raise self.state_error
        return self.state

    def last_local_input(self) -> float | None:
        return self.local_input_at

    def displays(self) -> list[Display]:
        width, height = self.size
        return [Display(0, 0, width, height, scale=1.0, primary=True)]

    def set_reduce_motion(self, on: bool) -> None:
        self.calls.append(("reduce_motion", on))

    def close(self) -> None:
        pass


def element(key: str, x: int = 10, y: int = 10, **changes: object) -> AccessibleElement:
    base = AccessibleElement(key=key, role="push button", name=key, x=x, y=y, w=40, h=20)
    return replace(base, **changes)  # type: ignore[arg-type]


class RecordingDesktop:
    """Wraps any desktop (the sim) and signals when a key or button goes up."""

    def __init__(self, inner: Desktop) -> None:
        self.inner = inner
        self.capture_mode = inner.capture_mode
        self.has_damage = inner.has_damage
        self.grab_count = 0
        self.releases: list[str] = []
        self.released = threading.Event()

    def native_size(self) -> tuple[int, int]:
        return self.inner.native_size()

    def grab(self) -> Pixels:
        self.grab_count += 1
        return self.inner.grab()

    def poll_damage(self) -> list[Rect]:
        return self.inner.poll_damage()

    def move_pointer(self, x: int, y: int) -> None:
        self.inner.move_pointer(x, y)

    def set_button(self, button: MouseButton, down: bool) -> None:
        self.inner.set_button(button, down)
        if not down:
            self.releases.append(f"mouse_{button}")
            self.released.set()

    def scroll(self, dx: int, dy: int) -> None:
        self.inner.scroll(dx, dy)

    def set_key(self, key: str, down: bool) -> None:
        self.inner.set_key(key, down)
        if not down:
            self.releases.append(key)
            self.released.set()

    def type_text(self, text: str) -> None:
        self.inner.type_text(text)

    def snapshot_accessibility(self, budget: WalkBudget) -> AccessibilitySnapshot:
        return self.inner.snapshot_accessibility(budget)

    def list_windows(self) -> frozenset[int]:
        return self.inner.list_windows()

    def window_owners(self, window_ids: frozenset[int]) -> dict[int, int | None]:
        return self.inner.window_owners(window_ids)

    def close_windows(self, window_ids: frozenset[int]) -> None:
        self.inner.close_windows(window_ids)

    def window_stack(self) -> list[StackedWindow]:
        return self.inner.window_stack()

    def desktop_state(self) -> DesktopState:
        return self.inner.desktop_state()

    def last_local_input(self) -> float | None:
        return self.inner.last_local_input()

    def displays(self) -> list[Display]:
        return self.inner.displays()

    def set_reduce_motion(self, on: bool) -> None:
        self.inner.set_reduce_motion(on)

    def close(self) -> None:
        self.inner.close()


class FakeApps:
    """An `AppTracker` that starts nothing: pids are counters."""

    def __init__(self) -> None:
        self._next_pid = 1000
        self._pids: list[int] = []
        self.kill_all_calls = 0
        self.killed_all = threading.Event()

    @property
    def launched_pids(self) -> list[int]:
        return list(self._pids)

    def launch(self, path: str, args: Sequence[str]) -> int:
        if not path.startswith("/"):
            raise LaunchError(f"{path} could not be started: not found")
        self._next_pid += 1
        self._pids.append(self._next_pid)
        return self._next_pid

    def kill(self, pid: int | None) -> list[int]:
        if pid is None:
            killed, self._pids = self._pids, []
            return killed
        if pid not in self._pids:
            raise UnknownAppError(pid)
        self._pids.remove(pid)
        return [pid]

    def kill_all(self) -> list[int]:
        self.kill_all_calls += 1
        killed = self.kill(None)
        self.killed_all.set()
        return killed

    def owned_pids(self) -> frozenset[int]:
        return frozenset(self._pids)

"""What every `Desktop` backend must do, asked of each the same way (see rigs.py).

Coordinates are capture pixels; damage covers what changed; held input is released;
a password's text is never read; the accessibility walk honours its budget; killing an
app kills what it started; closing windows closes those and no others.
"""

from __future__ import annotations

import numpy as np

from rigway.agent.app_scope import intersect
from rigway.agent.backends.base import Rect, StackedWindow, WalkBudget
from rigway.agent.safety import InputGuard
from tests.agent.conformance.rigs import ConformanceRig
from tests.support.x_desktop import wait_until

SECRET = "hunter2-€-𝄞"


def _covers(rects: list[Rect], target: Rect) -> bool:
    """Whether the union of `rects` covers every pixel of `target`."""
    width = max([target.x + target.w, *(r.x + r.w for r in rects)])
    height = max([target.y + target.h, *(r.y + r.h for r in rects)])
    mask = np.zeros((height, width), dtype=bool)
    for r in rects:
        mask[r.y : r.y + r.h, r.x : r.x + r.w] = True
    return bool(mask[target.y : target.y + target.h, target.x : target.x + target.w].all())


def test_pointer_lands_on_the_capture_pixel_asked_for(rig: ConformanceRig) -> None:
    width, height = rig.desktop.native_size()
    for point in ((0, 0), (width - 1, height - 1), (width // 2, height // 3), (7, height - 5)):
        rig.desktop.move_pointer(*point)
        assert rig.pointer() == point


def test_a_change_is_reported_as_damage_and_captured(rig: ConformanceRig) -> None:
    assert rig.desktop.has_damage
    rig.desktop.grab()
    rig.desktop.poll_damage()  # drain: the first poll may report the whole screen
    before = rig.desktop.grab().copy()

    changed = rig.change_screen()

    def damage_covers() -> bool:
        seen.extend(rig.desktop.poll_damage())
        return _covers(seen, changed)

    seen: list[Rect] = []
    wait_until(damage_covers, message=f"damage covering {changed}")
    after = rig.desktop.grab()
    region = (slice(changed.y, changed.y + changed.h), slice(changed.x, changed.x + changed.w))
    assert not np.array_equal(before[region], after[region])
    assert after.shape == (*reversed(rig.desktop.native_size()), 4)


def test_releasing_held_input_leaves_nothing_down(rig: ConformanceRig) -> None:
    guard = InputGuard(rig.desktop)
    width, height = rig.desktop.native_size()
    rig.desktop.move_pointer(width - 2, height - 2)  # away from any control
    for key in ("shift", "ctrl"):
        guard.key_down(key)
    guard.button_down("left")
    assert rig.held_count() >= 3

    released = guard.release_all()

    assert rig.held_count() == 0
    assert set(released) >= {"shift", "ctrl", "mouse_left"}


def test_a_password_is_masked_and_its_text_never_read(rig: ConformanceRig) -> None:
    rig.show_password(SECRET)

    snapshot = rig.desktop.snapshot_accessibility(WalkBudget())

    masked = [e for e in snapshot.elements if e.masked]
    assert len(masked) == 1
    assert masked[0].value is None
    assert SECRET not in repr(snapshot)


def test_the_walk_stops_at_its_element_cap(rig: ConformanceRig) -> None:
    rig.show_password(SECRET)
    full = rig.desktop.snapshot_accessibility(WalkBudget())
    assert len(full.elements) >= 2

    capped = rig.desktop.snapshot_accessibility(WalkBudget(max_elements=1))

    assert len(capped.elements) <= 1
    assert capped.truncated


def test_killing_an_app_ends_everything_it_started(rig: ConformanceRig) -> None:
    path, args = rig.tree_command()
    pid = rig.apps.launch(path, args)
    family = rig.tree_members(pid)

    killed = rig.apps.kill(pid)

    assert pid in killed
    assert rig.running(family) == frozenset()


def test_window_owners_and_close_touch_only_the_windows_named(rig: ConformanceRig) -> None:
    launched = rig.open_window(launched=True)
    assert launched is not None
    local = rig.open_window(launched=False)
    assert local is not None
    (session_window, session_pid), (local_window, local_pid) = launched, local

    owners = rig.desktop.window_owners(frozenset({session_window, local_window}))
    assert owners == {session_window: session_pid, local_window: local_pid}

    rig.desktop.close_windows(frozenset({session_window}))

    assert not rig.is_window_open(session_window)
    assert rig.is_window_open(local_window)


def test_the_window_stack_shows_an_opened_window_with_its_owner(rig: ConformanceRig) -> None:
    launched = rig.open_window(launched=True)
    assert launched is not None
    window_id, pid = launched
    width, height = rig.desktop.native_size()

    def listed() -> StackedWindow | None:
        return next((w for w in rig.desktop.window_stack() if w.window_id == window_id), None)

    entry = wait_until(listed, message=f"window {window_id} in the stack")

    assert entry.pid == pid
    assert not entry.is_popup
    assert intersect(entry.rect, Rect(0, 0, width, height)) == entry.rect

from __future__ import annotations

import contextlib
import threading

from rigway.agent.safety import InputGuard
from tests.agent.fakes import FakeDesktop


def test_release_all_releases_keys_in_reverse_then_buttons() -> None:
    desktop = FakeDesktop()
    guard = InputGuard(desktop)
    guard.key_down("ctrl")
    guard.key_down("shift")
    guard.button_down("left")
    guard.button_down("right")
    desktop.calls.clear()
    released = guard.release_all()
    assert released == ["shift", "ctrl", "mouse_right", "mouse_left"]
    assert desktop.calls == [
        ("key", "shift", False),
        ("key", "ctrl", False),
        ("button", "right", False),
        ("button", "left", False),
    ]
    assert guard.held_keys == ()
    assert guard.held_buttons == ()


def test_released_keys_are_not_released_again() -> None:
    desktop = FakeDesktop()
    guard = InputGuard(desktop)
    guard.key_down("a")
    guard.key_up("a")
    guard.button_down("left")
    guard.button_up("left")
    assert guard.release_all() == []


def test_nothing_held_releases_nothing() -> None:
    assert InputGuard(FakeDesktop()).release_all() == []


def test_failed_press_still_counts_as_held() -> None:
    desktop = FakeDesktop()
    desktop.fail_keys.add("alt")
    guard = InputGuard(desktop)
    with contextlib.suppress(OSError):
        guard.key_down("alt")
    assert guard.held_keys == ("alt",)


def test_one_failing_release_does_not_stop_the_others() -> None:
    desktop = FakeDesktop()
    desktop.fail_releases.add("ctrl")
    guard = InputGuard(desktop)
    guard.key_down("ctrl")
    guard.key_down("x")
    guard.button_down("left")
    assert guard.release_all() == ["x", "mouse_left"]
    assert guard.held_keys == ()


def test_interrupt_wakes_a_waiting_pause() -> None:
    guard = InputGuard(FakeDesktop())
    epoch = guard.epoch
    woke: list[bool] = []
    waiter = threading.Thread(target=lambda: woke.append(guard.wait_interrupted(30.0, epoch)))
    waiter.start()
    guard.interrupt()
    waiter.join(5.0)
    assert woke == [True]
    assert guard.is_interrupted(epoch)


def test_pause_without_interrupt_times_out_false() -> None:
    guard = InputGuard(FakeDesktop())
    assert guard.wait_interrupted(0.01, guard.epoch) is False

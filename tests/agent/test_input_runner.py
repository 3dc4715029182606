from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from rigway.agent.input_runner import (
    TYPE_CHUNK_CHARS,
    InputEventError,
    InputInterruptedError,
    run_batch,
    run_event,
)
from rigway.agent.safety import InputGuard
from rigway.protocol.ops import InputEvent
from tests.agent.fakes import FakeDesktop


def _events(*events: dict[str, Any]) -> list[InputEvent]:
    return [InputEvent.model_validate(e) for e in events]


def _run(desktop: FakeDesktop, *events: dict[str, Any]) -> int:
    guard = InputGuard(desktop)
    return run_batch(guard, _events(*events), epoch=guard.epoch)


def test_events_run_in_order() -> None:
    desktop = FakeDesktop()
    count = _run(
        desktop,
        {"type": "mouse_move", "x": 5, "y": 6},
        {"type": "type_text", "text": "hé 漢字"},
        {"type": "mouse_scroll", "dy": -3},
        {"type": "key_down", "key": "Shift"},
        {"type": "key_up", "key": "shift"},
    )
    assert count == 5
    assert desktop.calls == [
        ("move", 5, 6),
        ("type", "hé 漢字"),
        ("scroll", 0, -3),
        ("key", "shift", True),
        ("key", "shift", False),
    ]


def test_click_at_origin_moves_first() -> None:
    desktop = FakeDesktop()
    _run(desktop, {"type": "mouse_click", "x": 0, "y": 0})
    assert desktop.calls == [("move", 0, 0), ("button", "left", True), ("button", "left", False)]


def test_click_without_position_clicks_in_place() -> None:
    desktop = FakeDesktop()
    _run(desktop, {"type": "mouse_click", "button": "right"})
    assert desktop.calls == [("button", "right", True), ("button", "right", False)]


def test_scroll_at_position_moves_first() -> None:
    desktop = FakeDesktop()
    _run(desktop, {"type": "mouse_scroll", "x": 0, "y": 9, "dx": 2, "dy": 0})
    assert desktop.calls == [("move", 0, 9), ("scroll", 2, 0)]


def test_chord_presses_in_order_and_releases_in_reverse() -> None:
    desktop = FakeDesktop()
    _run(desktop, {"type": "key_press", "key": "ctrl+shift+s"})
    assert desktop.calls == [
        ("key", "ctrl", True),
        ("key", "shift", True),
        ("key", "s", True),
        ("key", "s", False),
        ("key", "shift", False),
        ("key", "ctrl", False),
    ]


def test_failure_mid_chord_releases_what_was_pressed_and_names_the_event() -> None:
    desktop = FakeDesktop()
    desktop.fail_keys.add("s")
    guard = InputGuard(desktop)
    events = _events({"type": "type_text", "text": "x"}, {"type": "key_press", "key": "ctrl+s"})
    with pytest.raises(InputEventError) as caught:
        run_batch(guard, events, epoch=guard.epoch)
    assert caught.value.index == 1
    assert "event 1 (key_press)" in str(caught.value)
    assert desktop.calls[-2:] == [("key", "s", False), ("key", "ctrl", False)]
    assert guard.held_keys == ()


def test_key_down_stays_held_until_released() -> None:
    desktop = FakeDesktop()
    guard = InputGuard(desktop)
    run_batch(guard, _events({"type": "key_down", "key": "alt"}), epoch=guard.epoch)
    assert guard.held_keys == ("alt",)


def test_delay_ms_is_honoured_after_each_event() -> None:
    desktop = FakeDesktop()
    started = time.perf_counter()
    _run(
        desktop,
        {"type": "mouse_move", "x": 1, "y": 1, "delay_ms": 60},
        {"type": "mouse_move", "x": 2, "y": 2, "delay_ms": 60},
    )
    assert time.perf_counter() - started >= 0.12


def test_interrupt_stops_a_batch_in_its_pause() -> None:
    desktop = FakeDesktop()
    guard = InputGuard(desktop)
    epoch = guard.epoch
    events = _events(
        {"type": "mouse_move", "x": 1, "y": 1, "delay_ms": 5000},
        {"type": "mouse_move", "x": 2, "y": 2},
    )
    errors: list[BaseException] = []

    def run() -> None:
        try:
            run_batch(guard, events, epoch=epoch)
        except InputInterruptedError as exc:
            errors.append(exc)

    worker = threading.Thread(target=run)
    started = time.perf_counter()
    worker.start()
    guard.interrupt()
    worker.join(5.0)
    assert time.perf_counter() - started < 2.0
    assert len(errors) == 1
    assert ("move", 2, 2) not in desktop.calls


def test_batch_accepted_before_an_interrupt_does_not_start() -> None:
    desktop = FakeDesktop()
    guard = InputGuard(desktop)
    epoch = guard.epoch
    guard.interrupt()
    with pytest.raises(InputInterruptedError):
        run_batch(guard, _events({"type": "type_text", "text": "late"}), epoch=epoch)
    assert desktop.calls == []


def test_long_text_is_typed_whole_in_chunks() -> None:
    desktop = FakeDesktop()
    text = "é漢🙂" * 100  # 300 characters, none split into bytes or halves
    assert _run(desktop, {"type": "type_text", "text": text}) == 1
    typed = [str(call[1]) for call in desktop.calls if call[0] == "type"]
    assert all(len(chunk) <= TYPE_CHUNK_CHARS for chunk in typed)
    assert "".join(typed) == text


class InterruptedWhileTyping(FakeDesktop):
    """The session ends while the first chunk is being typed."""

    guard: InputGuard

    def type_text(self, text: str) -> None:
        super().type_text(text)
        self.guard.interrupt()


def test_an_interrupt_stops_long_text_between_chunks() -> None:
    desktop = InterruptedWhileTyping()
    guard = InputGuard(desktop)
    desktop.guard = guard
    events = _events({"type": "type_text", "text": "a" * (TYPE_CHUNK_CHARS * 10)})
    with pytest.raises(InputInterruptedError):
        run_batch(guard, events, epoch=guard.epoch)
    assert desktop.calls == [("type", "a" * TYPE_CHUNK_CHARS)]


def test_mouse_down_and_up_move_first_and_hold_between() -> None:
    desktop = FakeDesktop()
    guard = InputGuard(desktop)
    run_batch(guard, _events({"type": "mouse_down", "x": 3, "y": 4}), epoch=guard.epoch)
    held_between = guard.held_buttons
    run_batch(
        guard, _events({"type": "mouse_up", "x": 7, "y": 8, "button": "left"}), epoch=guard.epoch
    )
    assert held_between == ("left",)
    assert guard.held_buttons == ()
    assert desktop.calls == [
        ("move", 3, 4),
        ("button", "left", True),
        ("move", 7, 8),
        ("button", "left", False),
    ]


def test_a_point_given_to_run_event_replaces_the_events_own() -> None:
    desktop = FakeDesktop()
    guard = InputGuard(desktop)
    (click,) = _events({"type": "mouse_click", "button": "middle"})
    run_event(guard, click, index=0, epoch=guard.epoch, point=(30, 40))
    assert desktop.calls == [
        ("move", 30, 40),
        ("button", "middle", True),
        ("button", "middle", False),
    ]


def test_releasing_buttons_leaves_held_keys_alone() -> None:
    desktop = FakeDesktop()
    guard = InputGuard(desktop)
    events = _events(
        {"type": "key_down", "key": "shift"},
        {"type": "mouse_down", "button": "right"},
        {"type": "mouse_down"},
    )
    run_batch(guard, events, epoch=guard.epoch)
    assert guard.release_buttons() == ["mouse_left", "mouse_right"]
    assert guard.held_buttons == ()
    assert guard.held_keys == ("shift",)


def test_a_button_that_would_not_release_is_tried_again() -> None:
    desktop = FakeDesktop()
    guard = InputGuard(desktop)
    run_batch(guard, _events({"type": "mouse_down"}), epoch=guard.epoch)
    desktop.fail_releases.add("button:left")
    assert guard.release_buttons() == []
    desktop.fail_releases.clear()
    assert guard.release_all() == ["mouse_left"]

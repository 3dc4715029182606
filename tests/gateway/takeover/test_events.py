"""The takeover page's messages read into host input events, and what a person holds."""

from __future__ import annotations

from typing import Any

import pytest

from rigway.gateway.takeover.events import (
    MAX_SCROLL_NOTCHES,
    MAX_TEXT_CHARS,
    BadHumanEvent,
    HeldInput,
    human_event,
)
from rigway.protocol import ops

NATIVE = (1920, 1080)


def _event(message: dict[str, Any]) -> ops.InputEvent:
    return human_event(message, *NATIVE)


def test_a_video_point_maps_onto_native_pixels() -> None:
    event = _event({"type": "mouse_move", "x": 480, "y": 270, "width": 960, "height": 540})
    assert (event.type, event.x, event.y) == ("mouse_move", 960, 540)


def test_a_point_off_the_video_is_clamped_onto_its_edge() -> None:
    event = _event({"type": "mouse_move", "x": 5000, "y": -3, "width": 960, "height": 540})
    assert (event.x, event.y) == (1919, 0)


def test_a_press_keeps_its_button_and_point() -> None:
    event = _event(
        {"type": "mouse_down", "button": "right", "x": 1, "y": 1, "width": 1920, "height": 1080}
    )
    assert (event.type, event.button, event.x, event.y) == ("mouse_down", "right", 1, 1)


def test_a_release_without_a_point_releases_where_the_pointer_is() -> None:
    event = _event({"type": "mouse_up", "button": "left"})
    assert (event.type, event.button, event.x, event.y) == ("mouse_up", "left", None, None)


def test_a_wheel_is_bounded_in_notches() -> None:
    message = {"type": "mouse_scroll", "x": 0, "y": 0, "width": 10, "height": 10, "dy": -999}
    event = _event(message)
    assert (event.dx, event.dy) == (0, -MAX_SCROLL_NOTCHES)


def test_key_names_are_canonical() -> None:
    assert _event({"type": "key_down", "key": "Control"}).key == "ctrl"
    assert _event({"type": "key_up", "key": "A"}).key == "a"


def test_text_is_typed_as_text() -> None:
    event = _event({"type": "type_text", "text": "é"})
    assert (event.type, event.text) == ("type_text", "é")


@pytest.mark.parametrize(
    "message",
    [
        {"type": "key_down", "key": "nosuchkey"},
        {"type": "key_down"},
        {"type": "type_text", "text": ""},
        {"type": "type_text", "text": "x" * (MAX_TEXT_CHARS + 1)},
        {"type": "mouse_click", "x": 1, "y": 1, "width": 2, "height": 2},
        {"type": "mouse_move", "x": 1, "y": 1, "width": 0, "height": 2},
        {"type": "mouse_move", "x": "1", "y": 1, "width": 2, "height": 2},
        {"type": "mouse_move", "x": True, "y": 1, "width": 2, "height": 2},
        {"type": "mouse_move", "x": float("nan"), "y": 1, "width": 2, "height": 2},
        {"type": "mouse_move", "x": 1e300, "y": 1, "width": 2, "height": 2},
        {"type": "mouse_down", "button": "thumb", "x": 1, "y": 1, "width": 2, "height": 2},
    ],
)
def test_a_bad_message_is_refused(message: dict[str, Any]) -> None:
    with pytest.raises(BadHumanEvent):
        _event(message)


def test_what_is_held_is_released_buttons_first_keys_in_reverse() -> None:
    held = HeldInput()
    for event in [
        ops.InputEvent(type="key_down", key="ctrl"),
        ops.InputEvent(type="key_down", key="shift"),
        ops.InputEvent(type="key_down", key="a"),
        ops.InputEvent(type="key_up", key="a"),
        ops.InputEvent(type="mouse_down", button="left"),
        ops.InputEvent(type="mouse_down", button="right"),
        ops.InputEvent(type="mouse_up", button="right"),
        ops.InputEvent(type="mouse_move", x=1, y=1),
    ]:
        held.note(event)
    assert held.keys == ("ctrl", "shift")
    assert held.buttons == ("left",)
    releases = held.take_releases()
    assert [(e.type, e.button or e.key) for e in releases] == [
        ("mouse_up", "left"),
        ("key_up", "shift"),
        ("key_up", "ctrl"),
    ]
    assert held.take_releases() == []

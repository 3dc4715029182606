"""SendInput's record layouts (x64) and the builders, read back field by field."""

from __future__ import annotations

import ctypes

import pytest

from rigway.agent.backends.base import MouseButton
from rigway.agent.backends.windows import sendinput as si
from rigway.agent.backends.windows.sendinput import (
    HARDWAREINPUT,
    INPUT,
    KEYBDINPUT,
    MOUSEINPUT,
    TOKEN_MANDATORY_LABEL,
)

_ABSOLUTE_MOVE = si.MOUSEEVENTF_MOVE | si.MOUSEEVENTF_ABSOLUTE | si.MOUSEEVENTF_VIRTUALDESK


def test_input_is_40_bytes_with_its_union_after_the_padding() -> None:
    assert ctypes.sizeof(INPUT) == 40
    assert INPUT.type.offset == 0
    assert (INPUT.mi.offset, INPUT.ki.offset, INPUT.hi.offset) == (8, 8, 8)


@pytest.mark.parametrize(
    ("struct", "size", "offsets"),
    [
        (
            MOUSEINPUT,
            32,
            {"dx": 0, "dy": 4, "mouseData": 8, "dwFlags": 12, "time": 16, "dwExtraInfo": 24},
        ),
        (KEYBDINPUT, 24, {"wVk": 0, "wScan": 2, "dwFlags": 4, "time": 8, "dwExtraInfo": 16}),
        (HARDWAREINPUT, 8, {"uMsg": 0, "wParamL": 4, "wParamH": 6}),
    ],
)
def test_input_members_have_the_x64_layout(
    struct: type[ctypes.Structure], size: int, offsets: dict[str, int]
) -> None:
    assert ctypes.sizeof(struct) == size
    assert {name: getattr(struct, name).offset for name in offsets} == offsets


def test_token_mandatory_label_is_a_pointer_and_attributes() -> None:
    assert ctypes.sizeof(TOKEN_MANDATORY_LABEL) == 16
    assert TOKEN_MANDATORY_LABEL.Label.offset == 0


def test_absolute_move_is_move_absolute_virtualdesk() -> None:
    record = si.absolute_move(0, 65535)
    assert record.type == si.INPUT_MOUSE
    assert (record.mi.dx, record.mi.dy, record.mi.dwFlags) == (0, 65535, _ABSOLUTE_MOVE)
    assert record.mi.mouseData == 0


@pytest.mark.parametrize(("dx", "dy"), [(-1, 0), (0, 65536)])
def test_absolute_move_outside_the_range_is_refused(dx: int, dy: int) -> None:
    with pytest.raises(ValueError, match=r"0\.\.65535"):
        si.absolute_move(dx, dy)


@pytest.mark.parametrize(
    ("button", "down", "flag"),
    [
        ("left", True, si.MOUSEEVENTF_LEFTDOWN),
        ("left", False, si.MOUSEEVENTF_LEFTUP),
        ("right", True, si.MOUSEEVENTF_RIGHTDOWN),
        ("right", False, si.MOUSEEVENTF_RIGHTUP),
        ("middle", True, si.MOUSEEVENTF_MIDDLEDOWN),
        ("middle", False, si.MOUSEEVENTF_MIDDLEUP),
    ],
)
def test_button_record_has_only_its_flag_and_no_absolute(
    button: MouseButton, down: bool, flag: int
) -> None:
    record = si.button(button, down)
    assert record.type == si.INPUT_MOUSE
    assert record.mi.dwFlags == flag
    assert (record.mi.dx, record.mi.dy) == (0, 0)


def test_wheel_down_is_one_negative_delta_per_notch() -> None:
    records = si.wheel(-3, horizontal=False)
    assert [r.mi.dwFlags for r in records] == [si.MOUSEEVENTF_WHEEL] * 3
    assert [si.signed_mouse_data(r.mi) for r in records] == [-120] * 3
    # On the wire: the DWORD two's complement Windows reads as -120.
    assert records[0].mi.mouseData == 0xFFFFFF88


def test_horizontal_wheel_right_is_positive() -> None:
    records = si.wheel(2, horizontal=True)
    assert [(r.mi.dwFlags, si.signed_mouse_data(r.mi)) for r in records] == [
        (si.MOUSEEVENTF_HWHEEL, 120),
        (si.MOUSEEVENTF_HWHEEL, 120),
    ]


def test_no_notches_build_no_records() -> None:
    assert si.wheel(0, horizontal=False) == []


def test_extended_key_release_sets_extended_and_keyup() -> None:
    record = si.key(0x26, 0xE048, extended=True, down=False)
    assert record.type == si.INPUT_KEYBOARD
    assert (record.ki.wVk, record.ki.wScan) == (0x26, 0x48)
    assert record.ki.dwFlags == si.KEYEVENTF_EXTENDEDKEY | si.KEYEVENTF_KEYUP


def test_plain_key_press_has_no_flags() -> None:
    assert si.key(0x41, 0x1E, extended=False, down=True).ki.dwFlags == 0


def test_key_outside_the_vk_range_is_refused() -> None:
    with pytest.raises(ValueError, match="virtual-key"):
        si.key(0, 0, extended=False, down=True)


def test_unicode_unit_has_no_vk_and_only_unicode_and_keyup() -> None:
    down, up = si.unicode_unit(0xD83D, down=True), si.unicode_unit(0xD83D, down=False)
    assert (down.ki.wVk, down.ki.wScan, down.ki.dwFlags) == (0, 0xD83D, si.KEYEVENTF_UNICODE)
    assert up.ki.dwFlags == si.KEYEVENTF_UNICODE | si.KEYEVENTF_KEYUP


def test_unicode_beyond_a_code_unit_is_refused() -> None:
    with pytest.raises(ValueError, match="code unit"):
        si.unicode_unit(0x1F600, down=True)

"""Canonical key names → VK (+ extended, + Shift) and text → Unicode strokes."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rigway.agent.backends.windows import keymap
from rigway.agent.backends.windows.keymap import (
    KeyStroke,
    UnicodeStroke,
    key_stroke,
    parse_key_scan,
    text_strokes,
    wire_scan,
)
from rigway.protocol.keys import CHARACTER_KEYS, NAMED_KEYS, UnknownKeyError
from tests.agent.windows.fake_input import US_KEY_SCAN


def us_layout(char: str) -> int:
    return US_KEY_SCAN.get(char, -1)


def no_layout(char: str) -> int:
    raise AssertionError(f"the layout was asked about {char!r}")


@pytest.mark.parametrize("name", sorted(NAMED_KEYS | CHARACTER_KEYS))
def test_every_canonical_key_name_has_a_stroke(name: str) -> None:
    stroke = key_stroke(name, us_layout)
    if isinstance(stroke, KeyStroke):
        assert 0 < stroke.vk <= 0xFE
    else:
        assert stroke.code_unit == ord(name)


@pytest.mark.parametrize(
    "name",
    [
        *("up", "down", "left", "right", "insert", "delete", "home", "end", "pageup"),
        *("pagedown", "win", "menu", "printscreen"),
    ],
)
def test_navigation_win_and_apps_keys_are_extended(name: str) -> None:
    stroke = key_stroke(name, no_layout)
    assert isinstance(stroke, KeyStroke)
    assert stroke.extended


@pytest.mark.parametrize("name", ["enter", "escape", "tab", "ctrl", "alt", "shift", "f5", "a"])
def test_main_block_keys_are_not_extended(name: str) -> None:
    stroke = key_stroke(name, no_layout)
    assert isinstance(stroke, KeyStroke)
    assert not stroke.extended


def test_numpad_divide_and_right_modifiers_are_extended() -> None:
    assert {keymap.VK_DIVIDE, keymap.VK_RCONTROL, keymap.VK_RMENU, keymap.VK_RWIN}.issubset(
        keymap.EXTENDED_VKS
    )


def test_printscreen_sends_e0_37_not_the_sysrq_scan_code() -> None:
    stroke = key_stroke("printscreen", no_layout)
    assert isinstance(stroke, KeyStroke)
    assert wire_scan(stroke, 0x54) == (0x37, True)


def test_scan_code_with_an_e0_prefix_makes_a_key_extended() -> None:
    assert wire_scan(KeyStroke(0x90), 0xE045) == (0x45, True)


def test_extended_key_stays_extended_when_the_layout_omits_the_prefix() -> None:
    stroke = key_stroke("left", no_layout)
    assert isinstance(stroke, KeyStroke)
    assert wire_scan(stroke, 0x4B) == (0x4B, True)


@pytest.mark.parametrize(
    ("name", "vk"),
    [("ctrl", 0xA2), ("alt", 0xA4), ("shift", 0xA0), ("win", 0x5B), ("f1", 0x70), ("f24", 0x87)],
)
def test_modifiers_are_the_left_hand_keys_and_f_keys_are_consecutive(name: str, vk: int) -> None:
    assert key_stroke(name, no_layout) == KeyStroke(vk, extended=name == "win")


@pytest.mark.parametrize(("name", "vk"), [("a", 0x41), ("z", 0x5A), ("0", 0x30), ("9", 0x39)])
def test_letters_and_digits_are_their_own_vk_without_asking_the_layout(name: str, vk: int) -> None:
    assert key_stroke(name, no_layout) == KeyStroke(vk)


def test_unshifted_punctuation_is_the_layouts_key() -> None:
    assert key_stroke("-", us_layout) == KeyStroke(0xBD)


def test_shifted_punctuation_needs_shift() -> None:
    assert key_stroke("+", us_layout) == KeyStroke(0xBB, needs_shift=True)


def test_altgr_punctuation_is_typed_as_unicode() -> None:
    german_at = 0x0600 | 0x51  # Ctrl+Alt+Q
    assert key_stroke("@", lambda char: german_at) == UnicodeStroke(ord("@"))


def test_punctuation_missing_from_the_layout_is_typed_as_unicode() -> None:
    assert key_stroke("~", lambda char: -1) == UnicodeStroke(ord("~"))


def test_key_scan_minus_one_means_no_key() -> None:
    assert parse_key_scan(-1) is None
    assert parse_key_scan(0x1BB) == (0xBB, 1)


def test_unknown_key_name_is_refused() -> None:
    with pytest.raises(UnknownKeyError):
        key_stroke("hyper", us_layout)


def test_text_outside_the_bmp_is_its_surrogate_pair() -> None:
    assert text_strokes("a😀") == [
        UnicodeStroke(ord("a")),
        UnicodeStroke(0xD83D),
        UnicodeStroke(0xDE00),
    ]


@pytest.mark.parametrize("text", ["x\r\ny", "x\ry", "x\ny"])
def test_each_line_break_is_one_enter(text: str) -> None:
    assert text_strokes(text) == [
        UnicodeStroke(ord("x")),
        keymap.NAMED_KEYS_VK["enter"],
        UnicodeStroke(ord("y")),
    ]


def test_cr_cr_lf_is_two_enters() -> None:
    enter = keymap.NAMED_KEYS_VK["enter"]
    assert text_strokes("\r\r\n") == [enter, enter]


def test_tab_is_the_tab_key() -> None:
    assert text_strokes("\t") == [keymap.NAMED_KEYS_VK["tab"]]


def test_control_characters_and_lone_surrogates_are_not_typed() -> None:
    assert text_strokes("\x00\x08\x1b\x7f\x85\ud800") == []


@given(st.text(st.characters(blacklist_categories=("Cc", "Cs"))))
def test_unicode_strokes_spell_the_text(text: str) -> None:
    units = [s.code_unit for s in text_strokes(text) if isinstance(s, UnicodeStroke)]
    encoded = b"".join(unit.to_bytes(2, "little") for unit in units)
    assert encoded.decode("utf-16-le") == text

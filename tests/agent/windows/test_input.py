"""WindowsInput over a fake port: where input lands, what Windows would drop, what is held."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rigway.agent.backends.windows import sendinput as si
from rigway.agent.backends.windows.errors import InputBlockedError
from rigway.agent.backends.windows.geometry import OutputPlacement, VirtualDesk
from rigway.agent.backends.windows.input import MAX_RECORDS_PER_SEND, WindowsInput
from tests.agent.windows.fake_input import (
    ButtonEvent,
    FakeInputPort,
    KeyEvent,
    MoveEvent,
    Region,
    UnicodeEvent,
    WheelEvent,
)

MEDIUM = si.SECURITY_MANDATORY_MEDIUM_RID
HIGH = si.SECURITY_MANDATORY_HIGH_RID
VK_LSHIFT, VK_LCONTROL, VK_LWIN, VK_UP, VK_RETURN = 0xA0, 0xA2, 0x5B, 0x26, 0x0D
VK_OEM_PLUS = 0xBB

SINGLE = OutputPlacement(0, 0, 1920, 1080)


def make_input(port: FakeInputPort, placement: OutputPlacement = SINGLE) -> WindowsInput:
    return WindowsInput(port, lambda: placement)


# ---- pointer ---------------------------------------------------------------------------


def test_move_on_a_single_monitor_lands_on_the_pixel() -> None:
    port = FakeInputPort()
    role = make_input(port)
    role.move_pointer(1919, 0)
    assert port.events == [MoveEvent(1919, 0)]


def test_move_on_the_second_monitor_lands_right_of_the_primary() -> None:
    desk = VirtualDesk(0, 0, 3840, 1080)
    port = FakeInputPort(desk=desk)
    role = make_input(port, OutputPlacement(1920, 0, 1920, 1080))
    role.move_pointer(10, 20)
    assert port.cursor == (1930, 20)


def test_move_on_a_monitor_left_of_and_above_the_primary_uses_negative_origins() -> None:
    desk = VirtualDesk(-2560, -360, 4480, 1440)
    port = FakeInputPort(desk=desk)
    role = make_input(port, OutputPlacement(-2560, -360, 2560, 1440))
    role.move_pointer(0, 0)
    assert port.cursor == (-2560, -360)


@given(
    x=st.integers(0, 2559),
    y=st.integers(0, 1439),
    left=st.integers(-5000, 5000),
    top=st.integers(-3000, 3000),
)
def test_every_capture_pixel_of_any_placement_is_reached(
    x: int, y: int, left: int, top: int
) -> None:
    placement = OutputPlacement(left, top, 2560, 1440)
    # The primary (1920x1080 at the origin) beside the captured output.
    desk_left, desk_top = min(0, left), min(0, top)
    desk = VirtualDesk(
        desk_left,
        desk_top,
        max(1920, left + 2560) - desk_left,
        max(1080, top + 1440) - desk_top,
    )
    port = FakeInputPort(desk=desk)
    role = make_input(port, placement)
    role.move_pointer(x, y)
    assert placement.from_screen(*port.cursor) == (x, y)


def test_button_press_and_release_where_the_pointer_is() -> None:
    port = FakeInputPort()
    role = make_input(port)
    role.move_pointer(5, 5)
    role.set_button("left", True)
    role.set_button("left", False)
    assert port.events[1:] == [ButtonEvent("left", True), ButtonEvent("left", False)]
    assert port.cursor == (5, 5)


def test_scroll_down_sends_negative_wheel_notches() -> None:
    port = FakeInputPort()
    role = make_input(port)
    role.scroll(0, -3)
    assert port.events == [WheelEvent(-120, horizontal=False)] * 3


def test_scroll_right_sends_positive_horizontal_notches() -> None:
    port = FakeInputPort()
    role = make_input(port)
    role.scroll(2, 0)
    assert port.events == [WheelEvent(120, horizontal=True)] * 2


def test_scroll_up_and_left_in_one_batch() -> None:
    port = FakeInputPort()
    role = make_input(port)
    role.scroll(-1, 1)
    assert port.events == [WheelEvent(120, False), WheelEvent(-120, True)]
    assert port.batch_sizes == [2]


def test_scroll_of_nothing_sends_nothing() -> None:
    port = FakeInputPort()
    role = make_input(port)
    role.scroll(0, 0)
    assert port.batch_sizes == []


# ---- keys ------------------------------------------------------------------------------


def test_extended_key_carries_its_scan_code_and_the_extended_flag() -> None:
    port = FakeInputPort()
    role = make_input(port)
    role.set_key("up", True)
    role.set_key("up", False)
    assert port.events == [KeyEvent(VK_UP, True, 0x48, True), KeyEvent(VK_UP, False, 0x48, True)]


def test_chord_keys_go_down_in_order_and_stay_down_until_released() -> None:
    port = FakeInputPort()
    role = make_input(port)
    role.set_key("ctrl", True)
    role.set_key("c", True)
    assert port.keys_down == [VK_LCONTROL, ord("C")]
    role.set_key("c", False)
    role.set_key("ctrl", False)
    assert port.keys_down == []
    assert role.held_keys == ()


def test_shifted_punctuation_is_pressed_with_shift_and_released_after() -> None:
    port = FakeInputPort()
    role = make_input(port)
    role.set_key("+", True)
    assert port.keys_down == [VK_LSHIFT, VK_OEM_PLUS]
    role.set_key("+", False)
    assert port.key_events() == [
        (VK_LSHIFT, True),
        (VK_OEM_PLUS, True),
        (VK_OEM_PLUS, False),
        (VK_LSHIFT, False),
    ]


def test_shifted_punctuation_under_a_held_shift_adds_no_shift() -> None:
    port = FakeInputPort()
    role = make_input(port)
    role.set_key("shift", True)
    role.set_key("+", True)
    role.set_key("+", False)
    assert port.keys_down == [VK_LSHIFT]
    assert port.key_events().count((VK_LSHIFT, True)) == 1


def test_altgr_punctuation_is_pressed_as_unicode() -> None:
    port = FakeInputPort(layout={"@": 0x0651})
    role = make_input(port)
    role.set_key("@", True)
    role.set_key("@", False)
    assert port.events == [UnicodeEvent(ord("@"), True), UnicodeEvent(ord("@"), False)]


def test_a_held_key_is_not_pressed_again() -> None:
    port = FakeInputPort()
    role = make_input(port)
    role.set_key("a", True)
    role.set_key("a", True)
    assert port.key_events() == [(ord("A"), True)]


def test_releasing_a_key_not_held_still_sends_its_key_up() -> None:
    port = FakeInputPort()
    role = make_input(port)
    role.set_key("win", False)
    assert port.events == [KeyEvent(VK_LWIN, False, 0x5B, True)]


# ---- text ------------------------------------------------------------------------------


def test_text_with_surrogates_crlf_and_tabs_arrives_as_typed() -> None:
    port = FakeInputPort()
    role = make_input(port)
    role.type_text("héllo 😀\r\nnext\tcell\rend\n")
    assert port.typed_text == "héllo 😀\nnext\tcell\nend\n"
    assert port.keys_down == []
    assert port.batch_sizes == [len(port.events)]


def test_a_crlf_split_between_two_texts_is_one_enter() -> None:
    port = FakeInputPort()
    role = make_input(port)
    role.type_text("a\r")
    role.type_text("\nb")
    assert port.typed_text == "a\nb"


def test_a_key_between_cr_and_lf_keeps_them_two_enters() -> None:
    port = FakeInputPort()
    role = make_input(port)
    role.type_text("a\r")
    role.set_key("shift", True)
    role.type_text("\nb")
    assert port.typed_text == "a\n\nb"


def test_long_text_goes_out_in_slices_of_whole_pairs() -> None:
    port = FakeInputPort()
    role = make_input(port)
    text = "x" * MAX_RECORDS_PER_SEND
    role.type_text(text)
    assert port.typed_text == text
    assert port.batch_sizes == [MAX_RECORDS_PER_SEND, MAX_RECORDS_PER_SEND]


def test_empty_text_sends_nothing() -> None:
    port = FakeInputPort()
    role = make_input(port)
    role.type_text("\x00")
    assert port.batch_sizes == []


# ---- what Windows would drop -----------------------------------------------------------


def test_an_elevated_foreground_window_refuses_keys_and_sends_nothing() -> None:
    port = FakeInputPort(foreground=HIGH)
    role = make_input(port)
    with pytest.raises(InputBlockedError, match=r"foreground window runs elevated.*\(UIPI\)"):
        role.set_key("a", True)
    assert port.batch_sizes == []
    assert role.held_keys == ()


def test_an_elevated_foreground_window_refuses_text() -> None:
    port = FakeInputPort(foreground=HIGH)
    role = make_input(port)
    with pytest.raises(InputBlockedError, match="UIPI"):
        role.type_text("hello")
    assert port.batch_sizes == []


def test_an_unreadable_foreground_window_counts_as_elevated() -> None:
    role = make_input(FakeInputPort(foreground=None))
    with pytest.raises(InputBlockedError, match="cannot be read"):
        role.set_key("a", True)


def test_an_elevated_agent_drives_an_elevated_window() -> None:
    port = FakeInputPort(own=HIGH, foreground=HIGH)
    role = make_input(port)
    role.set_key("a", True)
    assert port.keys_down == [ord("A")]


def test_a_lower_foreground_window_takes_keys() -> None:
    port = FakeInputPort(foreground=si.SECURITY_MANDATORY_LOW_RID)
    role = make_input(port)
    role.type_text("ok")
    assert port.typed_text == "ok"


def test_a_move_onto_an_elevated_window_is_refused() -> None:
    port = FakeInputPort(windows=[Region(100, 100, 400, 300, HIGH)])
    role = make_input(port)
    with pytest.raises(InputBlockedError, match="window under the pointer runs elevated"):
        role.move_pointer(150, 150)
    assert port.events == []


def test_a_click_on_an_ordinary_window_works_while_an_elevated_one_has_the_focus() -> None:
    port = FakeInputPort(foreground=HIGH, windows=[Region(100, 100, 400, 300, HIGH)])
    role = make_input(port)
    role.move_pointer(600, 600)
    role.set_button("left", True)
    role.set_button("left", False)
    assert port.events[-1] == ButtonEvent("left", False)


def test_a_click_where_the_pointer_rests_on_an_elevated_window_is_refused() -> None:
    port = FakeInputPort(windows=[Region(0, 0, 50, 50, HIGH)], cursor=(10, 10))
    role = make_input(port)
    with pytest.raises(InputBlockedError, match="UIPI"):
        role.set_button("left", True)
    with pytest.raises(InputBlockedError, match="UIPI"):
        role.scroll(0, -1)
    assert port.events == []


def test_a_short_send_is_an_error_naming_the_cause() -> None:
    port = FakeInputPort(insert_limit=0)
    role = make_input(port)
    with pytest.raises(InputBlockedError, match=r"inserted 0 of 1 .*access denied"):
        role.move_pointer(1, 1)


def test_a_short_send_with_another_error_names_its_code() -> None:
    role = make_input(FakeInputPort(insert_limit=1, error=87))
    with pytest.raises(InputBlockedError, match=r"inserted 1 of 4 .*Win32 error 87"):
        role.type_text("ab")


def test_a_key_whose_release_was_not_inserted_stays_held() -> None:
    port = FakeInputPort()
    role = make_input(port)
    role.set_key("shift", True)
    port.insert_limit = 0
    with pytest.raises(InputBlockedError):
        role.set_key("shift", False)
    assert role.held_keys == ("shift",)


# ---- release ---------------------------------------------------------------------------


def test_close_releases_held_keys_in_reverse_then_buttons() -> None:
    port = FakeInputPort()
    role = make_input(port)
    role.set_key("ctrl", True)
    role.set_key("+", True)
    role.set_button("right", True)
    role.set_button("left", True)
    role.close()
    assert port.keys_down == []
    assert port.buttons_down == set()
    releases = [e for e in port.events if isinstance(e, KeyEvent | ButtonEvent) and not e.down]
    assert [(e.vk if isinstance(e, KeyEvent) else e.button) for e in releases] == [
        VK_OEM_PLUS,
        VK_LSHIFT,
        VK_LCONTROL,
        "left",
        "right",
    ]
    assert (role.held_keys, role.held_buttons) == ((), ())


def test_close_releases_even_under_an_elevated_foreground_window() -> None:
    port = FakeInputPort()
    role = make_input(port)
    role.set_key("win", True)
    port.foreground = HIGH
    role.close()
    assert port.keys_down == []


def test_close_tries_every_release_and_raises_the_first_failure() -> None:
    port = FakeInputPort()
    role = make_input(port)
    role.set_key("ctrl", True)
    role.set_key("alt", True)
    port.insert_limit = 0
    with pytest.raises(InputBlockedError, match="inserted 0 of 1"):
        role.close()
    assert port.batch_sizes[-2:] == [1, 1]
    assert role.held_keys == ()


def test_close_with_nothing_held_sends_nothing() -> None:
    port = FakeInputPort()
    role = make_input(port)
    role.close()
    assert port.batch_sizes == []


def test_close_sends_a_release_even_for_a_press_that_failed() -> None:
    port = FakeInputPort(insert_limit=0)
    role = make_input(port)
    with pytest.raises(InputBlockedError):
        role.set_key("shift", True)
    port.insert_limit = None
    role.close()
    assert port.key_events() == [(VK_LSHIFT, False)]


def test_return_key_is_typed_for_a_line_break() -> None:
    port = FakeInputPort()
    role = make_input(port)
    role.type_text("\n")
    assert port.key_events() == [(VK_RETURN, True), (VK_RETURN, False)]


# ---- releases reach Windows whatever is in front -----------------------------------------


def test_a_key_release_under_an_elevated_foreground_window_is_sent() -> None:
    port = FakeInputPort()
    role = make_input(port)
    role.set_key("ctrl", True)
    port.foreground = HIGH
    role.set_key("ctrl", False)
    assert port.keys_down == []
    assert role.held_keys == ()


def test_a_key_release_under_an_unreadable_foreground_window_is_sent() -> None:
    port = FakeInputPort()
    role = make_input(port)
    role.set_key("win", True)
    port.foreground = None
    role.set_key("win", False)
    assert port.keys_down == []


def test_a_button_release_over_an_elevated_window_is_sent() -> None:
    port = FakeInputPort(cursor=(10, 10))
    role = make_input(port)
    role.set_button("left", True)
    port.windows = [Region(0, 0, 50, 50, HIGH)]
    role.set_button("left", False)
    assert port.buttons_down == set()
    assert role.held_buttons == ()


def test_a_button_release_that_was_not_inserted_is_an_error_and_stays_held() -> None:
    port = FakeInputPort()
    role = make_input(port)
    role.set_button("right", True)
    port.insert_limit = 0
    with pytest.raises(InputBlockedError, match="inserted 0 of 1"):
        role.set_button("right", False)
    assert role.held_buttons == ("right",)


# ---- a failed press leaves nothing pretending to be held ---------------------------------


def test_a_press_that_was_not_inserted_is_pressed_again_next_time() -> None:
    port = FakeInputPort(insert_limit=0)
    role = make_input(port)
    with pytest.raises(InputBlockedError):
        role.set_key("a", True)
    port.insert_limit = None
    role.set_key("a", True)
    assert port.key_events() == [(ord("A"), True)]
    assert role.held_keys == ("a",)


def test_a_press_that_was_not_inserted_is_not_reported_held() -> None:
    port = FakeInputPort(insert_limit=0)
    role = make_input(port)
    with pytest.raises(InputBlockedError):
        role.set_key("a", True)
    assert role.held_keys == ()


def test_a_half_sent_press_is_released_at_close() -> None:
    port = FakeInputPort(insert_limit=1)
    role = make_input(port)
    with pytest.raises(InputBlockedError, match="inserted 1 of 2"):
        role.set_key("+", True)
    assert port.keys_down == [VK_LSHIFT]
    port.insert_limit = None
    role.close()
    assert port.keys_down == []


def test_a_button_press_that_was_not_inserted_is_not_reported_held() -> None:
    port = FakeInputPort(insert_limit=0)
    role = make_input(port)
    with pytest.raises(InputBlockedError):
        role.set_button("left", True)
    assert role.held_buttons == ()
    port.insert_limit = None
    role.close()
    assert port.events == [ButtonEvent("left", False)]

"""The notification icon's pure side: layouts as Windows x64 has them, what each window
message means, the popup menu built from the tray's entries, the session and power
notifications decoded, and the icon's bitmaps from a Pillow image."""

from __future__ import annotations

import ctypes
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from PIL import Image

from rigway.agent.backends.windows.notify_icon import (
    CONSTANTS,
    GUID,
    GUID_CONSOLE_DISPLAY_STATE,
    ICON_CALLBACK_MESSAGE,
    ICON_ID,
    ICONINFO,
    MSG,
    NOTIFYICONDATAW,
    POWERBROADCAST_SETTING,
    WNDCLASSEXW,
    DisplayPower,
    TrayEvent,
    WindowMessages,
    anchor_point,
    classify_message,
    colour_bitmap_info,
    command_id,
    decode_power_setting,
    decode_session_change,
    icon_data,
    plan_menu,
    prepare_icon,
    split_power_setting,
    utf16_units,
)
from rigway.agent.backends.windows.tray import (
    AgentStatus,
    IconState,
    MenuEntry,
    TrayAction,
    draw_icon,
    menu_entries,
)

WINNT_H = Path("/usr/share/mingw-w64/include/winnt.h")
IDS = WindowMessages(apply=0xC123, taskbar_created=0xC0DE)
LIVE = AgentStatus(connected=True, session_live=True, api_access=True)
IDLE = AgentStatus(connected=True, session_live=False, api_access=True)
DISPLAY_ON = (1).to_bytes(4, "little")


def _callback(event: int) -> TrayEvent:
    # Version 4: the event in LOWORD(lParam), the icon's id in HIWORD.
    return classify_message(ICON_CALLBACK_MESSAGE, 0, (ICON_ID << 16) | event, IDS)


def _text(array: ctypes.Array[ctypes.c_uint16]) -> str:
    units = list(array)
    return bytes(b for u in units[: units.index(0)] for b in u.to_bytes(2, "little")).decode(
        "utf-16-le"
    )


# ---- layouts (the ABI test holds them to the mingw-w64 headers as well) -------------


@pytest.mark.skipif(ctypes.sizeof(ctypes.c_void_p) != 8, reason="the x64 layout")
@pytest.mark.parametrize(
    ("struct", "size"),
    [
        (GUID, 16),
        (NOTIFYICONDATAW, 976),
        (WNDCLASSEXW, 80),
        (MSG, 48),
        (ICONINFO, 32),
        (POWERBROADCAST_SETTING, 24),
    ],
)
def test_struct_has_its_x64_size(struct: type[ctypes.Structure], size: int) -> None:
    assert ctypes.sizeof(struct) == size


@pytest.mark.skipif(ctypes.sizeof(ctypes.c_void_p) != 8, reason="the x64 layout")
def test_notifyicondata_fields_sit_at_their_x64_offsets() -> None:
    offsets = {name: getattr(NOTIFYICONDATAW, name).offset for name, *_ in NOTIFYICONDATAW._fields_}
    assert offsets == {
        "cbSize": 0,
        "hWnd": 8,
        "uID": 16,
        "uFlags": 20,
        "uCallbackMessage": 24,
        "hIcon": 32,
        "szTip": 40,
        "dwState": 296,
        "dwStateMask": 300,
        "szInfo": 304,
        "DUMMYUNIONNAME": 816,
        "szInfoTitle": 820,
        "dwInfoFlags": 948,
        "guidItem": 952,
        "hBalloonIcon": 968,
    }


def test_power_setting_data_follows_guid_and_length() -> None:
    assert POWERBROADCAST_SETTING.DataLength.offset == 16
    assert POWERBROADCAST_SETTING.Data.offset == 20


@pytest.mark.skipif(not WINNT_H.exists(), reason="mingw-w64 headers absent")
def test_console_display_state_guid_matches_winnt_h() -> None:
    match = re.search(r"DEFINE_GUID\s*\(GUID_CONSOLE_DISPLAY_STATE,([^)]*)\)", WINNT_H.read_text())
    assert match is not None
    parts = [int(part, 16) for part in match.group(1).split(",")]
    declared = GUID.from_buffer_copy(GUID_CONSOLE_DISPLAY_STATE.bytes_le)
    assert [declared.Data1, declared.Data2, declared.Data3, *declared.Data4] == parts


# ---- NOTIFYICONDATAW ---------------------------------------------------------------


def test_icon_data_names_the_window_icon_and_callback() -> None:
    data = icon_data(0x1234, CONSTANTS["NIF_MESSAGE"] | CONSTANTS["NIF_TIP"], tip="Rigway: idle")
    assert data.cbSize == ctypes.sizeof(NOTIFYICONDATAW)
    assert (data.hWnd, data.uID) == (0x1234, ICON_ID)
    assert data.uCallbackMessage == ICON_CALLBACK_MESSAGE
    assert _text(data.szTip) == "Rigway: idle"


def test_icon_data_without_nif_message_sets_no_callback() -> None:
    assert icon_data(0x1234, CONSTANTS["NIF_TIP"], tip="x").uCallbackMessage == 0


def test_icon_data_with_a_version_fills_the_union() -> None:
    data = icon_data(0x1234, version=CONSTANTS["NOTIFYICON_VERSION_4"])
    assert data.uVersion == 4
    assert data.uTimeout == 4


def test_icon_data_with_info_is_a_warning_balloon() -> None:
    data = icon_data(0x1234, CONSTANTS["NIF_INFO"], info="End session failed", info_title="Rigway")
    assert (_text(data.szInfo), _text(data.szInfoTitle)) == ("End session failed", "Rigway")
    assert data.dwInfoFlags == CONSTANTS["NIIF_WARNING"]


def test_long_tip_is_cut_to_127_units_and_terminated() -> None:
    data = icon_data(0x1234, CONSTANTS["NIF_TIP"], tip="x" * 300)
    assert _text(data.szTip) == "x" * 127


def test_text_cut_never_splits_a_surrogate_pair() -> None:
    units = utf16_units("ab\U0001f600", 4)  # room for 3 units: the emoji needs 2
    assert units == [ord("a"), ord("b")]


@given(st.text(max_size=80), st.integers(min_value=1, max_value=40))
def test_cut_text_is_a_prefix_that_fits(text: str, capacity: int) -> None:
    units = utf16_units(text, capacity)
    encoded = b"".join(unit.to_bytes(2, "little") for unit in units)
    assert len(units) <= capacity - 1
    assert text.startswith(encoded.decode("utf-16-le"))


# ---- window messages ---------------------------------------------------------------


def test_context_menu_callback_shows_the_menu() -> None:
    assert _callback(CONSTANTS["WM_CONTEXTMENU"]) is TrayEvent.SHOW_MENU


def test_left_click_select_runs_the_default_action() -> None:
    assert _callback(CONSTANTS["NIN_SELECT"]) is TrayEvent.DEFAULT_ACTION


@pytest.mark.parametrize("event", ["WM_RBUTTONUP", "WM_LBUTTONUP", "NIN_KEYSELECT"])
def test_raw_mouse_and_key_select_callbacks_are_ignored(event: str) -> None:
    assert _callback(CONSTANTS[event]) is TrayEvent.IGNORED


def test_registered_messages_are_recognised() -> None:
    assert classify_message(IDS.apply, 0, 0, IDS) is TrayEvent.APPLY
    assert classify_message(IDS.taskbar_created, 0, 0, IDS) is TrayEvent.TASKBAR_CREATED


def test_unregistered_message_ids_do_not_claim_wm_null() -> None:
    ids = WindowMessages(apply=0, taskbar_created=0)
    assert classify_message(CONSTANTS["WM_NULL"], 0, 0, ids) is TrayEvent.UNHANDLED


def test_power_setting_change_is_recognised() -> None:
    message = CONSTANTS["WM_POWERBROADCAST"]
    event = classify_message(message, CONSTANTS["PBT_POWERSETTINGCHANGE"], 0x5000, IDS)
    assert event is TrayEvent.POWER_SETTING


def test_other_power_broadcasts_go_to_the_default_procedure() -> None:
    pbt_apmsuspend = 0x4
    event = classify_message(CONSTANTS["WM_POWERBROADCAST"], pbt_apmsuspend, 0, IDS)
    assert event is TrayEvent.UNHANDLED


@pytest.mark.parametrize(
    ("message", "event"),
    [
        ("WM_WTSSESSION_CHANGE", TrayEvent.SESSION_CHANGE),
        ("WM_CLOSE", TrayEvent.CLOSE),
        ("WM_DESTROY", TrayEvent.DESTROY),
    ],
)
def test_window_messages_are_classified(message: str, event: TrayEvent) -> None:
    assert classify_message(CONSTANTS[message], 0, 0, IDS) is event


def test_anchor_point_reads_signed_coordinates_from_wparam() -> None:
    assert anchor_point((200 << 16) | 100) == (100, 200)
    assert anchor_point((50 << 16) | (-1920 & 0xFFFF)) == (-1920, 50)


# ---- the menu ----------------------------------------------------------------------


def test_live_menu_lists_visible_entries_with_a_separator_after_end_session() -> None:
    plan = plan_menu(menu_entries(LIVE))
    labels = [item.label for item in plan.items]
    assert labels == ["End session", "", "Pause API access", "Open console"]
    assert plan.items[1].flags == CONSTANTS["MF_SEPARATOR"]
    assert plan.items[1].command_id == 0


def test_chosen_command_id_maps_back_to_its_action() -> None:
    plan = plan_menu(menu_entries(LIVE))
    assert plan.action_for(command_id(TrayAction.END_SESSION)) is TrayAction.END_SESSION
    assert plan.action_for(0) is None  # TrackPopupMenu: nothing chosen


def test_disabled_entry_is_greyed_and_cannot_be_chosen() -> None:
    plan = plan_menu(menu_entries(IDLE))
    end_session = plan.items[0]
    assert end_session.flags & CONSTANTS["MF_GRAYED"]
    assert plan.action_for(end_session.command_id) is None


def test_open_console_is_the_default_item() -> None:
    plan = plan_menu(menu_entries(IDLE))
    assert plan.default_action is TrayAction.OPEN_CONSOLE
    assert plan.default_command_id == command_id(TrayAction.OPEN_CONSOLE)


def test_disabled_default_leaves_no_default_item() -> None:
    entries = [MenuEntry(TrayAction.OPEN_CONSOLE, "Open console", enabled=False)]
    assert plan_menu(entries).default_command_id is None


def test_end_session_last_gets_no_trailing_separator() -> None:
    entries = [
        MenuEntry(TrayAction.OPEN_CONSOLE, "Open console", enabled=True),
        MenuEntry(TrayAction.END_SESSION, "End session", enabled=True),
    ]
    assert [item.label for item in plan_menu(entries).items] == ["Open console", "End session"]


def test_ampersand_in_a_label_is_shown_not_a_mnemonic() -> None:
    entries = [MenuEntry(TrayAction.OPEN_CONSOLE, "Open R&D console", enabled=True)]
    assert plan_menu(entries).items[0].label == "Open R&&D console"


def test_command_ids_are_distinct_and_nonzero() -> None:
    ids = [command_id(action) for action in TrayAction]
    assert len(set(ids)) == len(ids)
    assert 0 not in ids


# ---- notifications -----------------------------------------------------------------


@pytest.mark.parametrize(("wparam", "change"), [(0x7, "locked"), (0x8, "unlocked"), (0x1, None)])
def test_session_change_is_decoded(wparam: int, change: str | None) -> None:
    assert decode_session_change(wparam) == change


@pytest.mark.parametrize(
    ("value", "power", "is_on"),
    [(0, DisplayPower.OFF, False), (1, DisplayPower.ON, True), (2, DisplayPower.DIMMED, True)],
)
def test_display_state_is_decoded(value: int, power: DisplayPower, is_on: bool) -> None:
    decoded = decode_power_setting(GUID_CONSOLE_DISPLAY_STATE.bytes_le, value.to_bytes(4, "little"))
    assert decoded is power
    assert power.is_on is is_on


def test_another_power_setting_is_not_the_display() -> None:
    assert decode_power_setting(bytes(16), DISPLAY_ON) is None


def test_guid_in_registry_byte_order_is_not_the_display() -> None:
    # The struct holds Data1..3 little-endian; the big-endian form must not match.
    assert decode_power_setting(GUID_CONSOLE_DISPLAY_STATE.bytes, DISPLAY_ON) is None


@pytest.mark.parametrize("data", [b"\x01", (3).to_bytes(4, "little")])
def test_short_or_unknown_display_data_is_not_decoded(data: bytes) -> None:
    assert decode_power_setting(GUID_CONSOLE_DISPLAY_STATE.bytes_le, data) is None


def test_power_setting_header_gives_guid_and_data_length() -> None:
    setting = POWERBROADCAST_SETTING()
    setting.PowerSetting = GUID.from_buffer_copy(GUID_CONSOLE_DISPLAY_STATE.bytes_le)
    setting.DataLength = 4
    header = bytes(setting)[: POWERBROADCAST_SETTING.Data.offset]
    assert split_power_setting(header) == (GUID_CONSOLE_DISPLAY_STATE.bytes_le, 4)


def test_truncated_power_setting_header_is_refused() -> None:
    with pytest.raises(ValueError, match="header"):
        split_power_setting(bytes(19))


# ---- the icon ----------------------------------------------------------------------


def _two_by_two() -> Image.Image:
    image = Image.new("RGBA", (2, 2))
    image.putdata(
        [
            (255, 0, 0, 255),  # opaque red
            (0, 255, 0, 128),  # half-opaque green: opaque in the mask
            (0, 0, 255, 127),  # just under half: transparent in the mask
            (10, 20, 30, 0),  # fully transparent, colour kept as it is
        ]
    )
    return image


def test_icon_colour_is_top_down_bgra_with_straight_alpha() -> None:
    bitmaps = prepare_icon(_two_by_two())
    assert (bitmaps.width, bitmaps.height) == (2, 2)
    assert bitmaps.colour_bgra == bytes(
        [0, 0, 255, 255, 0, 255, 0, 128, 255, 0, 0, 127, 30, 20, 10, 0]
    )


def test_icon_mask_marks_transparent_pixels_msb_first_in_word_rows() -> None:
    bitmaps = prepare_icon(_two_by_two())
    assert bitmaps.mask_stride == 2
    assert bitmaps.mask == bytes([0x00, 0x00, 0xC0, 0x00])


def test_icon_mask_rows_are_padded_to_whole_words() -> None:
    bitmaps = prepare_icon(Image.new("RGBA", (17, 1), (0, 0, 0, 0)))
    assert bitmaps.mask_stride == 4
    assert bitmaps.mask == bytes([0xFF, 0xFF, 0x80, 0x00])


def test_icon_is_resized_to_the_small_icon_size() -> None:
    bitmaps = prepare_icon(draw_icon(IconState.LIVE), 20)
    assert (bitmaps.width, bitmaps.height) == (20, 20)
    assert len(bitmaps.colour_bgra) == 20 * 20 * 4
    assert len(bitmaps.mask) == 4 * 20


def test_colour_bitmap_is_a_32_bit_top_down_dib() -> None:
    header = colour_bitmap_info(20, 16).bmiHeader
    assert (header.biWidth, header.biHeight) == (20, -16)
    assert (header.biPlanes, header.biBitCount) == (1, 32)
    assert header.biCompression == CONSTANTS["BI_RGB"]
    assert header.biSize == 40

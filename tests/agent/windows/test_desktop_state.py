"""The desktop-state classifier as a table (the Windows 7 lock-flag inversion included),
the WTSINFOEX layout, and the state role over a scripted port."""

from __future__ import annotations

import ctypes
from dataclasses import replace

import pytest

from rigway.agent.backends.base import DesktopState
from rigway.agent.backends.windows.desktop_state import (
    CONSTANTS,
    NO_CONSOLE_SESSION,
    WTSINFOEX_LEVEL1_W,
    WTSINFOEXW,
    SessionInfo,
    StateSignals,
    WindowsDesktopState,
    classify,
    display_is_on,
    parse_session_info,
)
from tests.agent.windows.fake_win32 import CONSOLE_SESSION, FakeStatePort

LOCK = CONSTANTS["WTS_SESSIONSTATE_LOCK"]
UNLOCK = CONSTANTS["WTS_SESSIONSTATE_UNLOCK"]
UNKNOWN_FLAG = CONSTANTS["WTS_SESSIONSTATE_UNKNOWN"]
ACCESS_DENIED = CONSTANTS["ERROR_ACCESS_DENIED"]
WINDOWS_7 = (6, 1)
WINDOWS_8 = (6, 2)

NORMAL = StateSignals(
    input_desktop_name="Default",
    input_desktop_error=None,
    session_id=1,
    active_console_session_id=1,
    session=CONSOLE_SESSION,
    os_version=(10, 0),
)
REMOTE = replace(
    NORMAL,
    session=replace(CONSOLE_SESSION, session_id=2, station_name="RDP-Tcp#0"),
    session_id=2,
)


def flags(value: int) -> SessionInfo:
    return replace(CONSOLE_SESSION, session_flags=value)


def state(value: int) -> SessionInfo:
    return replace(CONSOLE_SESSION, connect_state=value)


def denied(signals: StateSignals) -> StateSignals:
    return replace(signals, input_desktop_name=None, input_desktop_error=ACCESS_DENIED)


TABLE: dict[str, tuple[StateSignals, DesktopState]] = {
    "the user's desktop": (NORMAL, "normal"),
    "desktop names in another case": (replace(NORMAL, input_desktop_name="DEFAULT"), "normal"),
    "UAC on the secure desktop": (replace(NORMAL, input_desktop_name="Winlogon"), "secure_desktop"),
    "the lock screen": (
        replace(NORMAL, input_desktop_name="Winlogon", session=flags(LOCK)),
        "locked",
    ),
    "Winlogon with no lock flag": (
        replace(NORMAL, input_desktop_name="Winlogon", session=flags(UNKNOWN_FLAG)),
        "secure_desktop",
    ),
    "input desktop denied, unlocked": (denied(NORMAL), "secure_desktop"),
    "input desktop denied, locked": (denied(replace(NORMAL, session=flags(LOCK))), "locked"),
    "input desktop unreadable otherwise": (
        replace(NORMAL, input_desktop_name=None, input_desktop_error=6),
        "unknown",
    ),
    "input desktop unreadable, locked": (
        replace(NORMAL, input_desktop_name=None, input_desktop_error=6, session=flags(LOCK)),
        "locked",
    ),
    "a secure screen saver": (replace(NORMAL, input_desktop_name="Screen-saver"), "screensaver"),
    "a screen saver over a locked session": (
        replace(NORMAL, input_desktop_name="Screen-saver", session=flags(LOCK)),
        "screensaver",
    ),
    "the lock flag before the desktop switched": (replace(NORMAL, session=flags(LOCK)), "locked"),
    "another desktop is the input desktop": (
        replace(NORMAL, input_desktop_name="Sysinternals Desktop 1"),
        "unknown",
    ),
    "session 0": (replace(NORMAL, session_id=0), "no_display"),
    "a disconnected session": (
        replace(NORMAL, session=state(CONSTANTS["WTSDisconnected"])),
        "no_display",
    ),
    "a session going down": (replace(NORMAL, session=state(CONSTANTS["WTSDown"])), "unknown"),
    "a connected session": (replace(NORMAL, session=state(CONSTANTS["WTSConnected"])), "normal"),
    "the console with no session attached": (
        replace(NORMAL, active_console_session_id=NO_CONSOLE_SESSION),
        "no_display",
    ),
    "the console taken by another session": (
        replace(NORMAL, active_console_session_id=3),
        "no_display",
    ),
    "a remote session while another has the console": (
        replace(REMOTE, active_console_session_id=1),
        "normal",
    ),
    "a remote session while no one has the console": (
        replace(REMOTE, active_console_session_id=NO_CONSOLE_SESSION),
        "normal",
    ),
    "the display off": (replace(NORMAL, display_on=False), "no_display"),
    "the display on": (replace(NORMAL, display_on=True), "normal"),
    "no session information": (replace(NORMAL, session=None), "normal"),
    "no session information, desktop denied": (
        denied(replace(NORMAL, session=None)),
        "secure_desktop",
    ),
    "no OS version to read the flag by": (
        replace(NORMAL, session=flags(LOCK), os_version=None),
        "normal",
    ),
    "Windows 7, LOCK value (means unlocked)": (
        replace(NORMAL, session=flags(LOCK), os_version=WINDOWS_7),
        "normal",
    ),
    "Windows 7, UNLOCK value (means locked)": (
        replace(NORMAL, session=flags(UNLOCK), os_version=WINDOWS_7),
        "locked",
    ),
    "Windows 7, Winlogon with UNLOCK value": (
        replace(NORMAL, input_desktop_name="Winlogon", session=flags(UNLOCK), os_version=WINDOWS_7),
        "locked",
    ),
    "Windows 7, Winlogon with LOCK value": (
        replace(NORMAL, input_desktop_name="Winlogon", session=flags(LOCK), os_version=WINDOWS_7),
        "secure_desktop",
    ),
    "Windows 8, LOCK value": (replace(NORMAL, session=flags(LOCK), os_version=WINDOWS_8), "locked"),
}


@pytest.mark.parametrize(("signals", "expected"), TABLE.values(), ids=TABLE.keys())
def test_signals_classify_to_their_state(signals: StateSignals, expected: DesktopState) -> None:
    assert classify(signals) == expected


# -- WTSINFOEX: the documented layout (the mingw-w64 headers lack it) --------------------


def test_wtsinfoex_level1_has_the_documented_x64_layout() -> None:
    # 3 x 4 bytes, then WCHAR[33], [21], [18]; the LARGE_INTEGERs align to 8.
    assert WTSINFOEX_LEVEL1_W.SessionFlags.offset == 8
    assert WTSINFOEX_LEVEL1_W.WinStationName.offset == 12
    assert WTSINFOEX_LEVEL1_W.UserName.offset == 78
    assert WTSINFOEX_LEVEL1_W.DomainName.offset == 120
    assert WTSINFOEX_LEVEL1_W.LogonTime.offset == 160
    assert WTSINFOEX_LEVEL1_W.IncomingBytes.offset == 200
    assert ctypes.sizeof(WTSINFOEX_LEVEL1_W) == 224


def test_wtsinfoexw_puts_its_union_at_offset_8() -> None:
    assert WTSINFOEXW.Data.offset == 8
    assert ctypes.sizeof(WTSINFOEXW) == 232


def wtsinfoex(level: int, station: str, session_flags: int) -> bytes:
    info = WTSINFOEXW()
    info.Level = level
    level1 = info.Data.WTSInfoExLevel1
    level1.SessionId = 3
    level1.SessionState = CONSTANTS["WTSActive"]
    level1.SessionFlags = session_flags
    units = station.encode("utf-16-le")
    ctypes.memmove(ctypes.addressof(level1.WinStationName), units, len(units))
    return bytes(info)


def test_session_info_is_parsed_from_the_level1_record() -> None:
    parsed = parse_session_info(wtsinfoex(1, "RDP-Tcp#5", UNLOCK))

    assert parsed == SessionInfo(3, CONSTANTS["WTSActive"], UNLOCK, "RDP-Tcp#5")


def test_unknown_session_flag_reads_unsigned() -> None:
    parsed = parse_session_info(wtsinfoex(1, "Console", -1))

    assert parsed is not None
    assert parsed.session_flags == UNKNOWN_FLAG


def test_record_of_another_level_is_not_parsed() -> None:
    assert parse_session_info(wtsinfoex(2, "Console", UNLOCK)) is None


def test_short_buffer_is_not_parsed() -> None:
    assert parse_session_info(b"\x01\x00\x00\x00") is None


@pytest.mark.parametrize(("value", "is_on"), [(0, False), (1, True), (2, True)])
def test_display_power_value_dimmed_counts_as_on(value: int, is_on: bool) -> None:
    assert display_is_on(value) is is_on


# -- the role ------------------------------------------------------------------------------


def test_role_reports_normal_for_an_unlocked_console() -> None:
    assert WindowsDesktopState(FakeStatePort()).desktop_state() == "normal"


def test_role_follows_the_input_desktop() -> None:
    port = FakeStatePort()
    role = WindowsDesktopState(port)
    port.desktop_name, port.desktop_error = None, ACCESS_DENIED

    assert role.desktop_state() == "secure_desktop"


def test_role_reports_no_display_after_display_off() -> None:
    role = WindowsDesktopState(FakeStatePort())

    role.note_display_power(False)

    assert role.desktop_state() == "no_display"


def test_role_reports_normal_again_after_display_on() -> None:
    role = WindowsDesktopState(FakeStatePort())
    role.note_display_power(False)

    role.note_display_power(True)

    assert role.desktop_state() == "normal"


def test_failed_input_desktop_read_is_unknown_not_an_error() -> None:
    port = FakeStatePort()
    port.failing.add("input_desktop_name")

    assert WindowsDesktopState(port).desktop_state() == "unknown"


def test_failed_session_query_leaves_the_desktop_name_to_decide() -> None:
    port = FakeStatePort()
    port.failing.add("session_info")

    assert WindowsDesktopState(port).desktop_state() == "normal"


def test_unreadable_own_session_does_not_raise() -> None:
    port = FakeStatePort()
    port.failing.add("own_session_id")

    assert WindowsDesktopState(port).signals().session_id is None


def test_role_reads_the_os_version_once() -> None:
    port = FakeStatePort()
    role = WindowsDesktopState(port)
    port.version = WINDOWS_7

    assert role.signals().os_version == (10, 0)

"""Whether the Windows desktop can be seen and driven now: a pure classifier of the
platform's signals, and the state role (`roles.StateRole`) that gathers them.

Signals (read by `_desktop_state.py`):
- the input desktop's name (OpenInputDesktop + GetUserObjectInformationW(UOI_NAME)):
  "Default" is the user's desktop, "Winlogon" the lock screen, UAC's consent prompt or
  Ctrl+Alt+Del, "Screen-saver" a secure screen saver. While the secure desktop is up a
  user process cannot open it: the call fails with ERROR_ACCESS_DENIED;
- the session (WTSQuerySessionInformationW(WTSSessionInfoEx) → WTSINFOEX_LEVEL1_W): its
  connect state (a disconnected remote session has no display and no input), its window
  station name ("Console" for the physical console) and its lock flag. On Windows 7 and
  Server 2008 R2 the flag's LOCK and UNLOCK values are swapped
  (https://learn.microsoft.com/windows/win32/api/wtsapi32/ns-wtsapi32-wtsinfoex_level1_w);
- the agent's session id (ProcessIdToSessionId): 0 is the services' session, which has
  no interactive desktop;
- the active console session (WTSGetActiveConsoleSessionId): 0xFFFFFFFF while no session
  owns the console (a switch between users is under way);
- the session's display power, reported by whoever receives the power notifications
  (`WindowsDesktopState.note_display_power`).

Anything that cannot be read leaves its signal None, and a state that cannot be told is
"unknown", never "normal": input is only sent while the state is "normal".

WTSINFOEX and its level-1 struct are declared by Windows' wtsapi32.h but not by the
mingw-w64 headers the ABI test compiles against; their layout is checked by this
module's tests against the documented one instead.
"""

from __future__ import annotations

import ctypes
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final, Protocol, TypeVar

from rigway.agent.backends.base import DesktopState
from rigway.agent.backends.windows._ctypes_types import DWORD, LONG, utf16_name
from rigway.agent.backends.windows.abi import AbiDeclarations

__all__ = [
    "ABI",
    "CONSTANTS",
    "NO_CONSOLE_SESSION",
    "WTSINFOEXW",
    "WTSINFOEX_LEVEL1_W",
    "WTSINFOEX_LEVEL_W",
    "SessionInfo",
    "StatePort",
    "StateSignals",
    "WindowsDesktopState",
    "classify",
    "display_is_on",
    "parse_session_info",
]

_log = logging.getLogger(__name__)

CONSTANTS: Final[Mapping[str, int]] = {
    "DESKTOP_READOBJECTS": 0x1,
    "UOI_NAME": 2,
    "ERROR_ACCESS_DENIED": 5,
    "ERROR_INSUFFICIENT_BUFFER": 122,
    "WTS_CURRENT_SESSION": 0xFFFF_FFFF,
    "WINSTATIONNAME_LENGTH": 32,
    "USERNAME_LENGTH": 20,
    "DOMAIN_LENGTH": 17,
    "WTSActive": 0,
    "WTSConnected": 1,
    "WTSConnectQuery": 2,
    "WTSShadow": 3,
    "WTSDisconnected": 4,
    "WTSIdle": 5,
    "WTSListen": 6,
    "WTSReset": 7,
    "WTSDown": 8,
    "WTSInit": 9,
    # Not in mingw-w64's wtsapi32.h (see the module docstring).
    "WTSSessionInfoEx": 25,
    "WTS_SESSIONSTATE_UNKNOWN": 0xFFFF_FFFF,
    "WTS_SESSIONSTATE_LOCK": 0,
    "WTS_SESSIONSTATE_UNLOCK": 1,
}

# WTSGetActiveConsoleSessionId while no session is attached to the console.
NO_CONSOLE_SESSION: Final = 0xFFFF_FFFF

WCHAR = ctypes.c_uint16  # ctypes.c_wchar is 4 bytes on Linux: a UTF-16 unit is 2
LARGE_INTEGER = ctypes.c_int64  # a union in C; its size and alignment are an int64's
_WINSTATION_CHARS = CONSTANTS["WINSTATIONNAME_LENGTH"] + 1
_USERNAME_CHARS = CONSTANTS["USERNAME_LENGTH"] + 1
_DOMAIN_CHARS = CONSTANTS["DOMAIN_LENGTH"] + 1


class WTSINFOEX_LEVEL1_W(ctypes.Structure):
    _fields_ = (
        ("SessionId", ctypes.c_uint32),  # ULONG
        ("SessionState", ctypes.c_int32),  # WTS_CONNECTSTATE_CLASS
        ("SessionFlags", LONG),
        ("WinStationName", WCHAR * _WINSTATION_CHARS),
        ("UserName", WCHAR * _USERNAME_CHARS),
        ("DomainName", WCHAR * _DOMAIN_CHARS),
        ("LogonTime", LARGE_INTEGER),
        ("ConnectTime", LARGE_INTEGER),
        ("DisconnectTime", LARGE_INTEGER),
        ("LastInputTime", LARGE_INTEGER),
        ("CurrentTime", LARGE_INTEGER),
        ("IncomingBytes", DWORD),
        ("OutgoingBytes", DWORD),
        ("IncomingFrames", DWORD),
        ("OutgoingFrames", DWORD),
        ("IncomingCompressedBytes", DWORD),
        ("OutgoingCompressedBytes", DWORD),
    )


class WTSINFOEX_LEVEL_W(ctypes.Union):
    _fields_ = (("WTSInfoExLevel1", WTSINFOEX_LEVEL1_W),)


class WTSINFOEXW(ctypes.Structure):
    _fields_ = (("Level", DWORD), ("Data", WTSINFOEX_LEVEL_W))


_ABSENT = "mingw-w64 10's wtsapi32.h has no WTSINFOEX (nor has mingw-w64 master, 2026)"

ABI = AbiDeclarations(
    structs=(WTSINFOEX_LEVEL1_W, WTSINFOEX_LEVEL_W, WTSINFOEXW),
    constants=CONSTANTS,
    headers=("windows.h", "wtsapi32.h"),
    absent_from_headers={
        "WTSINFOEX_LEVEL1_W": _ABSENT,
        "WTSINFOEX_LEVEL_W": _ABSENT,
        "WTSINFOEXW": _ABSENT,
        "WTSSessionInfoEx": _ABSENT,
        "WTS_SESSIONSTATE_UNKNOWN": _ABSENT,
        "WTS_SESSIONSTATE_LOCK": _ABSENT,
        "WTS_SESSIONSTATE_UNLOCK": _ABSENT,
    },
)


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """The agent's session as WTSSessionInfoEx tells it. `session_flags` is unsigned
    (WTS_SESSIONSTATE_UNKNOWN is 0xFFFFFFFF, not -1)."""

    session_id: int
    connect_state: int
    session_flags: int
    station_name: str


def parse_session_info(raw: bytes) -> SessionInfo | None:
    """The WTSINFOEXW WTSQuerySessionInformationW returned, copied out of its buffer;
    None when it is not a level-1 record (the only level Windows defines)."""
    if len(raw) < ctypes.sizeof(WTSINFOEXW):
        return None
    info = WTSINFOEXW.from_buffer_copy(raw)
    if info.Level != 1:
        return None
    level1 = info.Data.WTSInfoExLevel1
    return SessionInfo(
        session_id=int(level1.SessionId),
        connect_state=int(level1.SessionState),
        session_flags=int(level1.SessionFlags) & 0xFFFF_FFFF,
        station_name=utf16_name(level1.WinStationName),
    )


def display_is_on(power_setting_value: int) -> bool:
    """GUID_SESSION_DISPLAY_STATUS (or GUID_CONSOLE_DISPLAY_STATE) data: 0 off, 1 on,
    2 dimmed; a dimmed display still shows the desktop."""
    return power_setting_value != 0


@dataclass(frozen=True, slots=True)
class StateSignals:
    """Everything `classify` looks at; None where a signal could not be read.

    `input_desktop_error` is GetLastError when the input desktop's name could not be
    read. `os_version` is (major, minor). `display_on` is the last display power
    reported (None until one is)."""

    input_desktop_name: str | None
    input_desktop_error: int | None
    session_id: int | None
    active_console_session_id: int | None
    session: SessionInfo | None
    os_version: tuple[int, int] | None
    display_on: bool | None = None


# Connect states of a session with a client attached (active, connected, or shadowing
# another session); any other but "disconnected" is transitional: "unknown".
_ATTACHED_STATES = frozenset(
    {CONSTANTS["WTSActive"], CONSTANTS["WTSConnected"], CONSTANTS["WTSShadow"]}
)


def classify(signals: StateSignals) -> DesktopState:
    """The desktop state these signals describe."""
    if signals.session_id == 0:
        return "no_display"
    session = signals.session
    if session is not None and session.connect_state not in _ATTACHED_STATES:
        return "no_display" if session.connect_state == CONSTANTS["WTSDisconnected"] else "unknown"
    if _console_is_elsewhere(signals) or signals.display_on is False:
        return "no_display"
    is_locked = _lock_flag(signals)
    name = signals.input_desktop_name
    if name is None:
        if is_locked:
            return "locked"
        # A user process is denied the secure desktop (lock screen, UAC, Ctrl+Alt+Del).
        denied = signals.input_desktop_error == CONSTANTS["ERROR_ACCESS_DENIED"]
        return "secure_desktop" if denied else "unknown"
    desktop = name.casefold()  # desktop names compare without regard to case
    if desktop == "screen-saver":
        return "screensaver"
    if is_locked:
        return "locked"
    if desktop == "winlogon":
        return "secure_desktop"
    return "normal" if desktop == "default" else "unknown"


def _console_is_elsewhere(signals: StateSignals) -> bool:
    """The agent's session is the console's, but the console is not attached to it
    (no session has it: a user switch is under way, or another session took it)."""
    session, console = signals.session, signals.active_console_session_id
    if session is None or console is None or session.station_name.casefold() != "console":
        return False
    return console == NO_CONSOLE_SESSION or console != session.session_id


def _lock_flag(signals: StateSignals) -> bool | None:
    """True locked, False unlocked, None unknown (no flag, or no OS version to read
    it by)."""
    if signals.session is None or signals.os_version is None:
        return None
    flags = signals.session.session_flags
    lock, unlock = CONSTANTS["WTS_SESSIONSTATE_LOCK"], CONSTANTS["WTS_SESSIONSTATE_UNLOCK"]
    if signals.os_version == (6, 1):  # Windows 7 and Server 2008 R2: the values are swapped
        lock, unlock = unlock, lock
    if flags == lock:
        return True
    if flags == unlock:
        return False
    return None


class StatePort(Protocol):
    """The Win32 reads `WindowsDesktopState` needs. Each may raise OSError; a failed
    read becomes a None signal."""

    def input_desktop_name(self) -> tuple[str | None, int | None]:
        """(the input desktop's name, None), or (None, GetLastError) when it could not
        be opened or read."""
        ...

    def session_info(self) -> SessionInfo | None:
        """The agent's session (WTS_CURRENT_SESSION); None when the query failed."""
        ...

    def own_session_id(self) -> int | None: ...

    def active_console_session_id(self) -> int | None: ...

    def os_version(self) -> tuple[int, int] | None: ...


_T = TypeVar("_T")


class WindowsDesktopState:
    """The state role: reads the signals on every call (cheap reads, no cache to go
    stale) and classifies them. Safe from any thread."""

    def __init__(self, port: StatePort) -> None:
        self._port = port
        self._lock = threading.Lock()
        self._display_on: bool | None = None
        # Neither changes while the agent runs: read once.
        self._session_id = self._read(port.own_session_id)
        self._os_version = self._read(port.os_version)

    def note_display_power(self, is_on: bool) -> None:
        """The session's display went on or off (the tray window receives
        WM_POWERBROADCAST/PBT_POWERSETTINGCHANGE; see `display_is_on`)."""
        with self._lock:
            self._display_on = is_on

    def signals(self) -> StateSignals:
        name, error = self._read(self._port.input_desktop_name) or (None, None)
        with self._lock:
            display_on = self._display_on
        return StateSignals(
            input_desktop_name=name,
            input_desktop_error=error,
            session_id=self._session_id,
            active_console_session_id=self._read(self._port.active_console_session_id),
            session=self._read(self._port.session_info),
            os_version=self._os_version,
            display_on=display_on,
        )

    def desktop_state(self) -> DesktopState:
        """Never raises: "unknown" when the state cannot be told."""
        try:
            return classify(self.signals())
        except Exception:
            _log.exception("could not tell the desktop state")
            return "unknown"

    def close(self) -> None:
        """Nothing is held between calls."""

    @staticmethod
    def _read(read: Callable[[], _T]) -> _T | None:
        try:
            return read()
        except OSError as exc:
            _log.debug("a desktop-state signal could not be read: %s", exc)
            return None

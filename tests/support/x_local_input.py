"""Input from a real (non-XTEST) device of an Xvfb server, for owner-presence tests.

Xvfb has no hardware, but it does have slave devices of its own, "Xvfb mouse" and
"Xvfb keyboard", beside XTEST's. XTEST's FakeInput takes an XInput 1 device event
(DeviceKeyPress, DeviceButtonPress, …) with a device id, and the server then sends it
through that device: its XI2 raw events carry the device's id as `sourceid`, exactly as
a keyboard or mouse plugged into the rig would. (XInput 1 events only; a core event
would go through XTEST's own device, as the agent's input does.)
"""

from __future__ import annotations

import time
from typing import Any, Final

import xcffib
import xcffib.xinput
import xcffib.xtest

__all__ = ["XvfbDevices"]

# XInput 1 event codes, from the extension's first event.
_DEVICE_KEY_PRESS: Final = 1
_DEVICE_KEY_RELEASE: Final = 2
_DEVICE_BUTTON_PRESS: Final = 3
_DEVICE_BUTTON_RELEASE: Final = 4
# Shift_L on the server's default keymap: pressing it types nothing anywhere.
SHIFT_KEYCODE: Final = 50


class XvfbDevices:
    """Presses on "Xvfb keyboard" and "Xvfb mouse" of `display_name`."""

    def __init__(self, display_name: str) -> None:
        conn: Any = xcffib.connect(display=display_name)  # type: ignore[no-untyped-call]
        self._conn = conn
        self._xtest: Any = conn(xcffib.xtest.key)
        self._xtest.GetVersion(2, 2).reply()
        xinput = conn.core.QueryExtension(len("XInputExtension"), "XInputExtension").reply()
        self._first_event = int(xinput.first_event)
        self._root = conn.get_setup().roots[conn.pref_screen].root
        xi: Any = conn(xcffib.xinput.key)
        xi.XIQueryVersion(2, 2).reply()
        names = {
            info.name.to_string(): int(info.deviceid)
            for info in xi.XIQueryDevice(xcffib.xinput.Device.All).reply().infos
        }
        self.keyboard_id = names["Xvfb keyboard"]
        self.mouse_id = names["Xvfb mouse"]

    def tap_shift(self) -> float:
        """Press and release Shift on the Xvfb keyboard; `time.monotonic()` just before
        the press was sent."""
        return self._send(self.keyboard_id, _DEVICE_KEY_PRESS, _DEVICE_KEY_RELEASE, SHIFT_KEYCODE)

    def click(self, button: int = 1) -> float:
        """Press and release a button of the Xvfb mouse; the time as for `tap_shift`."""
        return self._send(self.mouse_id, _DEVICE_BUTTON_PRESS, _DEVICE_BUTTON_RELEASE, button)

    def _send(self, device_id: int, press: int, release: int, detail: int) -> float:
        sent_at = time.monotonic()
        for code in (press, release):
            self._xtest.FakeInput(
                self._first_event + code, detail, 0, self._root, 0, 0, device_id, is_checked=True
            ).check()
        return sent_at

    def close(self) -> None:
        self._conn.disconnect()

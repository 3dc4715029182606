"""The desktop's monitors (`Desktop.displays`) for the hello and the `desktop/displays`
notes, held to the contract."""

from __future__ import annotations

import logging
from typing import Final

from rigway.agent.backends.base import Desktop
from rigway.agent.polled_reporter import PolledReporter
from rigway.protocol.displays import MAX_DISPLAYS, DisplayInfo

__all__ = ["DEFAULT_INTERVAL_S", "DisplaysReporter", "read_displays"]

_log = logging.getLogger(__name__)

DEFAULT_INTERVAL_S: Final = 5.0


def read_displays(desktop: Desktop, native_size: tuple[int, int]) -> list[DisplayInfo]:
    """`desktop.displays()` as the wire carries them, at most `MAX_DISPLAYS`.

    A backend that raises anyway, or answers nothing the wire can carry, reads as one
    display covering the capture (`native_size`), scale 1.0, primary."""
    width, height = native_size
    whole = [DisplayInfo(x=0, y=0, width=width, height=height, scale=1.0, primary=True)]
    try:
        found = desktop.displays()
    except Exception:
        _log.exception("the backend failed to list its displays")
        return whole
    shown: list[DisplayInfo] = []
    for display in found[:MAX_DISPLAYS]:
        try:
            shown.append(
                DisplayInfo(
                    x=display.x,
                    y=display.y,
                    width=display.width,
                    height=display.height,
                    scale=display.scale,
                    primary=display.primary,
                )
            )
        except ValueError:
            _log.error("the backend told a display the wire cannot carry: %r", display)
    return shown or whole


class DisplaysReporter(PolledReporter[list[DisplayInfo]]):
    """Reads the monitors on a worker thread every `interval_s` and reports changes.

    Monitors change rarely (one plugged in, a scale setting changed), and a read costs
    more than a desktop state sample (x11 opens a connection for it), hence its own,
    slower interval."""

    def __init__(self, desktop: Desktop, *, interval_s: float = DEFAULT_INTERVAL_S) -> None:
        super().__init__(interval_s=interval_s)
        self._desktop = desktop

    def _read(self) -> list[DisplayInfo]:
        return read_displays(self._desktop, self._desktop.native_size())

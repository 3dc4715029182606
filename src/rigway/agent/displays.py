"""The desktop's monitors (`Desktop.displays`) for the hello, held to the contract."""

from __future__ import annotations

import logging

from rigway.agent.backends.base import Desktop
from rigway.protocol.messages import MAX_DISPLAYS, DisplayInfo

__all__ = ["read_displays"]

_log = logging.getLogger(__name__)


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

"""The monitors of an X screen, from RandR, in the captured root's pixels.

RandR 1.5's `GetMonitors` lists the monitors the way desktops lay windows out (one per
active CRTC group, with the user's primary flag). The capture is the whole root window,
so a monitor's position on the root is already its position in capture pixels.

A server without RandR 1.5 (or a query that fails) reads as one display covering the
root. The DPI scale comes from the physical width the server reports: Xvfb and most
drivers fill it in; 0 means unknown, and the scale is then 1.0.
"""

from __future__ import annotations

import logging
from typing import Any, Final

import xcffib
import xcffib.randr
import xcffib.xproto

from rigway.agent.backends.base import Display

__all__ = ["read_displays", "scale_from_size"]

_log = logging.getLogger(__name__)

# Below 1.5 there is no GetMonitors.
_RANDR_MONITORS: Final = (1, 5)
_MM_PER_INCH: Final = 25.4
_BASE_DPI: Final = 96.0


def scale_from_size(width_px: int, width_mm: int) -> float:
    """The DPI scale (1.0 = 96 dpi) of a display `width_px` wide over `width_mm`."""
    if width_mm <= 0 or width_px <= 0:
        return 1.0
    dpi = width_px / (width_mm / _MM_PER_INCH)
    return round(dpi / _BASE_DPI, 2)


def read_displays(display_name: str) -> list[Display]:
    """The monitors of `display_name`'s default screen (one covering the root when RandR
    cannot list them); never raises: [] when the display cannot be read at all."""
    try:
        conn: Any = xcffib.Connection(display_name)  # type: ignore[no-untyped-call]
    except xcffib.XcffibException:
        _log.warning("cannot open X display %r to list its monitors", display_name)
        return []
    try:
        screen = conn.get_setup().roots[conn.pref_screen]
        whole = _whole_screen(screen)
        try:
            monitors = _monitors(conn, screen.root)
        except (xcffib.XcffibException, xcffib.ConnectionException) as exc:
            _log.warning("RandR could not list the monitors: %s", exc)
            monitors = []
        return monitors or [whole]
    except (xcffib.XcffibException, xcffib.ConnectionException) as exc:
        _log.warning("cannot read the X screen's monitors: %s", exc)
        return []
    finally:
        conn.disconnect()


def _whole_screen(screen: Any) -> Display:
    width, height = int(screen.width_in_pixels), int(screen.height_in_pixels)
    scale = scale_from_size(width, int(screen.width_in_millimeters))
    return Display(0, 0, width, height, scale=scale, primary=True)


def _monitors(conn: Any, root: int) -> list[Display]:
    if not conn.core.QueryExtension(len("RANDR"), "RANDR").reply().present:
        return []
    randr = conn(xcffib.randr.key)
    version = randr.QueryVersion(*_RANDR_MONITORS).reply()
    if (int(version.major_version), int(version.minor_version)) < _RANDR_MONITORS:
        return []
    reply = randr.GetMonitors(root, True).reply()
    found = [
        Display(
            int(m.x),
            int(m.y),
            int(m.width),
            int(m.height),
            scale=scale_from_size(int(m.width), int(m.width_in_millimeters)),
            primary=bool(m.primary),
        )
        for m in reply.monitors
        if int(m.width) > 0 and int(m.height) > 0
    ]
    # Without a primary set by the user, the first monitor (RandR's order) stands in.
    if found and not any(d.primary for d in found):
        first = found[0]
        found[0] = Display(first.x, first.y, first.width, first.height, first.scale, True)
    return found

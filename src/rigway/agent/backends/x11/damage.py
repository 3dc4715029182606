"""Dirty rectangles from the DAMAGE extension on the root window, in the poll model.

Damage on the root covers drawing in every child window (there is no compositor to hide
it). The damage object reports `NonEmpty`, so the server sends at most one event until
we subtract; each poll drains those events, moves the accumulated damage atomically into
an XFixes region (`DamageSubtract`) and reads the region back (`FetchRegion`):
~0.3 ms per poll. xcffib rather than python-xlib because python-xlib has no XFixes
region requests.
"""

from __future__ import annotations

from typing import Any

import xcffib
import xcffib.damage
import xcffib.xfixes

from rigway.agent.backends.base import Rect

# Both extensions refuse other requests until a version is negotiated.
DAMAGE_VERSION = (1, 1)
XFIXES_VERSION = (5, 0)


class DamageTracker:
    """Accumulates damage from the moment it is created; `poll` takes it."""

    def __init__(self, display_name: str) -> None:
        conn: Any = xcffib.connect(display=display_name)  # type: ignore[no-untyped-call]
        try:
            self._conn = conn
            screen = conn.get_setup().roots[conn.pref_screen]
            self._width = int(screen.width_in_pixels)
            self._height = int(screen.height_in_pixels)
            self._damage_ext: Any = conn(xcffib.damage.key)
            self._xfixes: Any = conn(xcffib.xfixes.key)
            self._xfixes.QueryVersion(*XFIXES_VERSION).reply()
            self._damage_ext.QueryVersion(*DAMAGE_VERSION).reply()
            self._damage = conn.generate_id()
            self._damage_ext.Create(
                self._damage, screen.root, xcffib.damage.ReportLevel.NonEmpty, is_checked=True
            ).check()
            self._region = conn.generate_id()
            self._xfixes.CreateRegion(self._region, 0, [], is_checked=True).check()
            # The server damages the whole root on creation; start from a clean slate.
            self.poll()
        except BaseException:
            conn.disconnect()
            raise

    def poll(self) -> list[Rect]:
        """Rectangles damaged since the previous poll, clipped to the screen, disjoint."""
        while self._conn.poll_for_event() is not None:
            pass  # NonEmpty notifications carry nothing the region does not
        self._damage_ext.Subtract(self._damage, 0, self._region)  # repair 0: take it all
        reply = self._xfixes.FetchRegion(self._region).reply()
        rects = (self._clip(r.x, r.y, r.width, r.height) for r in reply.rectangles)
        return [rect for rect in rects if rect is not None]

    def _clip(self, x: int, y: int, w: int, h: int) -> Rect | None:
        left, top = max(0, x), max(0, y)
        right, bottom = min(self._width, x + w), min(self._height, y + h)
        if right <= left or bottom <= top:
            return None
        return Rect(left, top, right - left, bottom - top)

    def close(self) -> None:
        try:
            self._damage_ext.Destroy(self._damage)
            self._xfixes.DestroyRegion(self._region)
            self._conn.flush()
        except xcffib.ConnectionException:
            pass  # the server is gone, and our resources with it
        finally:
            self._conn.disconnect()

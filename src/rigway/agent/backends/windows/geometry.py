"""Where the captured output sits on the virtual desktop, and the mappings through it.

Pure. Rigway's coordinates are native capture pixels of one output, origin top-left.
Windows speaks virtual-screen coordinates (the primary monitor's top-left is (0, 0);
monitors left of or above it have negative coordinates), and `SendInput` speaks
normalised absolute coordinates 0..65535 over the whole virtual desktop. The process is
per-monitor DPI aware (v2), so every one of these is in physical pixels and no scaling
enters here.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ABSOLUTE_MAX", "OutputPlacement", "VirtualDesk"]

# SendInput's absolute coordinates span 0..65535 on both axes.
ABSOLUTE_MAX = 65535


@dataclass(frozen=True, slots=True)
class OutputPlacement:
    """The captured output's rectangle on the virtual desktop (its DesktopCoordinates)."""

    left: int
    top: int
    width: int
    height: int

    def to_screen(self, x: int, y: int) -> tuple[int, int]:
        """Capture pixel → virtual-screen pixel."""
        return self.left + x, self.top + y

    def from_screen(self, x: int, y: int) -> tuple[int, int]:
        """Virtual-screen pixel → capture pixel (may fall outside the capture)."""
        return x - self.left, y - self.top


@dataclass(frozen=True, slots=True)
class VirtualDesk:
    """The virtual desktop's bounds: SM_XVIRTUALSCREEN, SM_YVIRTUALSCREEN,
    SM_CXVIRTUALSCREEN, SM_CYVIRTUALSCREEN."""

    x: int
    y: int
    width: int
    height: int

    def to_absolute(self, x: int, y: int) -> tuple[int, int]:
        """Virtual-screen pixel → SendInput's normalised (dx, dy) with
        MOUSEEVENTF_ABSOLUTE | MOUSEEVENTF_VIRTUALDESK.

        Pixel 0 maps to 0 and the last pixel (width - 1) to 65535; rounding to the
        nearest makes `from_absolute(to_absolute(p)) == p` for every pixel. Points
        outside the desktop are clamped to its edge."""
        return (
            _normalise(x - self.x, self.width),
            _normalise(y - self.y, self.height),
        )

    def from_absolute(self, dx: int, dy: int) -> tuple[int, int]:
        """The pixel Windows puts the pointer on for normalised (dx, dy)."""
        return (
            self.x + _denormalise(dx, self.width),
            self.y + _denormalise(dy, self.height),
        )


def _normalise(offset: int, extent: int) -> int:
    if extent <= 1:
        return 0
    clamped = min(max(offset, 0), extent - 1)
    # Round half up in integers: (2 * a * MAX + span) // (2 * span).
    span = extent - 1
    return (2 * clamped * ABSOLUTE_MAX + span) // (2 * span)


def _denormalise(value: int, extent: int) -> int:
    if extent <= 1:
        return 0
    span = extent - 1
    clamped = min(max(value, 0), ABSOLUTE_MAX)
    return (2 * clamped * span + ABSOLUTE_MAX) // (2 * ABSOLUTE_MAX)

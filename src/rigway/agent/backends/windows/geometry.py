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

        Each pixel is aimed at its centre: dx = floor((2 * offset + 1) * 65536 /
        (2 * extent)). Microsoft does not say how Windows turns dx back into a pixel;
        the two rules in use in the wild are round(dx * (extent - 1) / 65535) and
        floor(dx * extent / 65536), and the centre lands on the same pixel under both,
        for every pixel of any desktop up to 32768 pixels across (the tests check
        widths 1..8000). Which rule Windows applies is still to be confirmed on
        hardware by reading GetCursorPos after a move (the pointer step of the smoke
        checklist in docs/windows.md). Points outside the desktop are clamped to its
        edge."""
        return (
            _normalise(x - self.x, self.width),
            _normalise(y - self.y, self.height),
        )

    def from_absolute(self, dx: int, dy: int) -> tuple[int, int]:
        """The pixel normalised (dx, dy) names under floor(dx * extent / 65536), one of
        the two rules `to_absolute` satisfies (the one a fake of Windows applies)."""
        return (
            self.x + _denormalise(dx, self.width),
            self.y + _denormalise(dy, self.height),
        )


def _normalise(offset: int, extent: int) -> int:
    if extent <= 0:
        return 0
    clamped = min(max(offset, 0), extent - 1)
    steps = ABSOLUTE_MAX + 1
    return min((2 * clamped + 1) * steps // (2 * extent), ABSOLUTE_MAX)


def _denormalise(value: int, extent: int) -> int:
    if extent <= 0:
        return 0
    clamped = min(max(value, 0), ABSOLUTE_MAX)
    return min(clamped * extent // (ABSOLUTE_MAX + 1), extent - 1)

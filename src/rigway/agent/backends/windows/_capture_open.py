"""Binding: `open_screen`, the screen role of one output over the real DXGI and GDI ports.

DXGI Desktop Duplication when it can be had, GDI otherwise (`capture.open_screen_over`
decides, and switches later if DXGI gives out). GDI captures the same monitor as DXGI:
its HMONITOR is read from the DXGI enumeration, or, with no DXGI at all, it is the
primary monitor.
"""

from __future__ import annotations

import importlib
import logging
import sys
import time
from types import ModuleType

from rigway.agent.backends.windows.capture import open_screen_over
from rigway.agent.backends.windows.capture_ports import DuplicationPort
from rigway.agent.backends.windows.dxgi_policy import HResultError
from rigway.agent.backends.windows.dxgi_types import DXGI_ERROR_NOT_FOUND
from rigway.agent.backends.windows.errors import WindowsUnavailableError
from rigway.agent.backends.windows.roles import ScreenRole

assert sys.platform == "win32"

# A binding too: imported once the platform is known.
from rigway.agent.backends.windows._gdi import GdiCapture  # noqa: E402

__all__ = ["open_screen"]

_log = logging.getLogger(__name__)


class _SystemClock:
    def monotonic(self) -> float:
        return time.monotonic()


def open_screen(output_index: int | None = None) -> ScreenRole:
    """The capture of one output: `output_index` counts the outputs attached to the
    desktop in DXGI's enumeration order; None is the primary monitor.

    Raises `WindowsUnavailableError` when `output_index` names no output."""
    dxgi = _load_dxgi()
    monitor = _monitor_of(dxgi, output_index)

    def open_duplication() -> DuplicationPort:
        if dxgi is None:
            raise OSError("d3d11.dll or dxgi.dll could not be loaded")
        port: DuplicationPort = dxgi.DxgiDuplication(output_index)
        return port

    return open_screen_over(open_duplication, GdiCapture(monitor), _SystemClock())


def _load_dxgi() -> ModuleType | None:
    # The binding loads d3d11.dll and dxgi.dll on import; a Windows without them
    # (Server Core without the graphics feature) still has GDI.
    try:
        return importlib.import_module("rigway.agent.backends.windows._dxgi")
    except OSError as error:
        _log.warning("no DXGI here (%s): capturing with GDI", error)
        return None


def _monitor_of(dxgi: ModuleType | None, output_index: int | None) -> int | None:
    """The chosen output's HMONITOR, None for the primary one."""
    if dxgi is None:
        if output_index is not None:
            raise WindowsUnavailableError(
                f"display output {output_index} cannot be found (no DXGI)"
            )
        return None
    try:
        choices = dxgi.find_output(output_index)
    except HResultError as error:
        if error.hresult == DXGI_ERROR_NOT_FOUND and output_index is not None:
            raise WindowsUnavailableError(f"there is no display output {output_index}") from error
        return None
    except OSError as error:
        _log.warning("display outputs cannot be listed (%s): GDI uses the primary", error)
        return None
    monitor: int = choices[0].monitor
    return monitor or None

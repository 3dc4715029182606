"""The windows backend: DXGI Desktop Duplication (GDI fallback), SendInput, UI Automation.

Importable on every platform: the pure modules (layouts, parsing, policies, mappings)
are tested on Linux, and the binding modules (names starting with an underscore, each
beginning with `assert sys.platform == "win32"`) are imported only by the openers below,
on Windows. Nothing here reads the environment at import time.

`open_windows_desktop()` first makes the process per-monitor DPI aware (v2) and refuses
Session 0; it raises `WindowsUnavailableError` with a one-line reason when the backend
cannot run here (not Windows, Session 0).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING

from rigway.agent.backends.windows.errors import InputBlockedError, WindowsUnavailableError

if TYPE_CHECKING:
    from rigway.agent.apps import AppTracker
    from rigway.agent.backends.windows.desktop import WindowsDesktop

__all__ = [
    "InputBlockedError",
    "WindowsUnavailableError",
    "open_windows_apps",
    "open_windows_desktop",
]


def _is_windows() -> bool:
    return sys.platform == "win32"


def _bindings() -> ModuleType:
    # Asked through a function, so the type checker does not narrow on the platform:
    # this must type-check (and be reachable) on Linux and in the win32 pass alike.
    if not _is_windows():
        raise WindowsUnavailableError(
            f"the windows backend runs only on Windows; this machine runs {sys.platform}"
        )
    return importlib.import_module("rigway.agent.backends.windows._open")


def open_windows_desktop() -> WindowsDesktop:
    """The desktop of the session this process runs in (its primary output)."""
    opener: Callable[[], WindowsDesktop] = _bindings().open_desktop
    return opener()


def open_windows_apps() -> AppTracker:
    """The app tracker that runs each launch in a Job Object of its own."""
    opener: Callable[[], AppTracker] = _bindings().open_app_tracker
    return opener()

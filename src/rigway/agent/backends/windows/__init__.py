"""The windows backend: DXGI Desktop Duplication (GDI fallback), SendInput, UI Automation.

Importable on every platform: the pure modules (layouts, parsing, policies, mappings)
are tested on Linux, and the binding modules (names starting with an underscore, each
beginning with `assert sys.platform == "win32"`) are imported only by the openers below,
on Windows. Nothing here reads the environment at import time.

`open_windows_desktop()` first makes the process per-monitor DPI aware (v2) and refuses
Session 0; it raises `WindowsUnavailableError` with a one-line reason when the backend
cannot run here (not Windows, Session 0, a binding this Windows or this installation
cannot load).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, TypeVar

from rigway.agent.backends.windows.errors import InputBlockedError, WindowsUnavailableError

if TYPE_CHECKING:
    from rigway.agent.apps import AppTracker
    from rigway.agent.backends.windows.desktop import WindowsDesktop

_Opened = TypeVar("_Opened")

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
    return _import_bindings("rigway.agent.backends.windows._open")


def _import_bindings(module_name: str) -> ModuleType:
    """The binding module, or `WindowsUnavailableError` saying in one line why it cannot
    load: a package missing from the installation (ImportError), or a function missing
    from this Windows' DLLs (ctypes raises AttributeError for an absent export)."""
    try:
        return importlib.import_module(module_name)
    except (ImportError, AttributeError) as error:
        raise _cannot_load(error) from error


def _cannot_load(error: Exception) -> WindowsUnavailableError:
    reason = " ".join(str(error).split()) or type(error).__name__
    return WindowsUnavailableError(
        f"the windows backend cannot load on this Windows installation: {reason}"
    )


def _opened(opener: Callable[[], _Opened]) -> _Opened:
    """`opener()`; a package the bindings import on first use (comtypes) that is
    missing is a one-line `WindowsUnavailableError` too."""
    try:
        return opener()
    except ImportError as error:
        raise _cannot_load(error) from error


def open_windows_desktop() -> WindowsDesktop:
    """The desktop of the session this process runs in (its primary output)."""
    opener: Callable[[], WindowsDesktop] = _bindings().open_desktop
    return _opened(opener)


def open_windows_apps() -> AppTracker:
    """The app tracker that runs each launch in a Job Object of its own."""
    opener: Callable[[], AppTracker] = _bindings().open_app_tracker
    return _opened(opener)

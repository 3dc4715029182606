"""Errors of the Windows backend, importable everywhere.

WindowsUnavailableError(RuntimeError)   the backend cannot run here (not Windows,
                                        Session 0, no interactive desktop); the
                                        message is one line for the owner
InputBlockedError(OSError)              Windows would drop this input (an elevated
                                        foreground window, no input desktop)
"""

from __future__ import annotations

__all__ = ["InputBlockedError", "WindowsUnavailableError"]


class WindowsUnavailableError(RuntimeError):
    """The Windows backend cannot start here; `str(error)` says why in one line."""


class InputBlockedError(OSError):
    """Input that Windows would discard silently: reported instead of claimed as done."""

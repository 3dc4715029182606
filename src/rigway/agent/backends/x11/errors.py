"""Errors of the x11 backend."""

from __future__ import annotations


class X11UnavailableError(RuntimeError):
    """The x11 backend cannot run: no DISPLAY, an X display that cannot be opened, or an
    X server without a required extension. The message says which, for the operator."""

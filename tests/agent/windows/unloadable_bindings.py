"""A binding module that cannot load, as one using an export this Windows lacks."""

from __future__ import annotations

raise AttributeError(
    "function 'SetProcessDpiAwarenessContext' not found\n(Windows 10 1607 has no such export)"
)

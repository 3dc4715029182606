"""The windows backend: DXGI Desktop Duplication (GDI fallback), SendInput, UI Automation.

Importable on every platform: the pure modules (layouts, parsing, policies, mappings)
are tested on Linux, and the binding modules (names starting with `_win32_`, `_dxgi`,
`_uia`, …, each beginning with `assert sys.platform == "win32"`) are imported only by
`open_windows_desktop` on Windows. Nothing here reads the environment at import time.
"""

from rigway.agent.backends.windows.errors import InputBlockedError, WindowsUnavailableError

__all__ = ["InputBlockedError", "WindowsUnavailableError"]

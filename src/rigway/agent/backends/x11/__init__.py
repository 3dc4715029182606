"""The x11 backend: XShm capture, XDamage dirty rects, XTest input, AT-SPI targets.

`open_x11_desktop(display)` checks the display and returns an `X11Desktop`; it raises
`X11UnavailableError` when DISPLAY is unset or the display cannot be opened. Nothing
here reads the environment at import time.
"""

from rigway.agent.backends.x11.desktop import X11Desktop, open_x11_desktop
from rigway.agent.backends.x11.errors import X11UnavailableError

__all__ = ["X11Desktop", "X11UnavailableError", "open_x11_desktop"]

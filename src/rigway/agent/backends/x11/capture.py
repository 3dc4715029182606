"""Full-desktop capture with mss (XCB XShmGetImage: ~1.2 ms for 1920x1080 on Xvfb)."""

from __future__ import annotations

import mss
import numpy as np
from mss.exception import ScreenShotError

from rigway.agent.backends.base import Pixels


class ScreenCapture:
    """Grabs the root window. Not thread-safe by itself: the screen role's lock guards it."""

    def __init__(self, display_name: str) -> None:
        self._display_name = display_name
        self._sct: mss.MSS | None = None

    def grab(self) -> Pixels:
        """BGRA (height, width, 4), a view over a fresh buffer that nothing else holds.

        The fourth byte is the X server's padding of a depth-24 pixel (0 on Xvfb), not
        an opacity: the JPEG and video encoders ignore it, and setting it would cost a
        pass over 8 MB per frame.
        """
        try:
            return self._grab_once()
        except ScreenShotError:
            # mss sizes its shared-memory segment once: after a resize (RandR) it must be
            # created again. A second failure is real and propagates.
            self.close()
            return self._grab_once()

    def _grab_once(self) -> Pixels:
        if self._sct is None:
            self._sct = mss.MSS(display=self._display_name)
        shot = self._sct.grab(self._sct.monitors[0])
        # mss copies the segment into a new bytearray per grab, so a view is safe to keep.
        pixels = np.frombuffer(shot.raw, dtype=np.uint8)
        return pixels.reshape(shot.height, shot.width, 4)

    def close(self) -> None:
        sct, self._sct = self._sct, None
        if sct is not None:
            sct.close()

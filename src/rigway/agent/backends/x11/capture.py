"""Full-desktop capture: MIT-SHM GetImage into our own segment, handed out without a copy.

The server writes the root window straight into a System V shared-memory segment we
attached, and `grab` returns a numpy view over that segment: 0.67 ms for 1920x1080 on
Xvfb, where mss (the same request, then a copy of the 8 MB into a fresh buffer per grab)
takes 1.35 ms. The price is the contract in `ScreenCapture.grab`: the next grab
overwrites the pixels. A display we cannot share memory with (no MIT-SHM, or a remote
server, which cannot see our segment) falls back to mss, which copies.

xcffib rather than mss's connection: mss does not hand out its segment. System V rather
than a memfd: xcffib's `AttachFd` cannot pass a file descriptor.
"""

from __future__ import annotations

import ctypes
import functools
import os
import weakref
from pathlib import Path
from typing import Any

import mss
import numpy as np
import xcffib
import xcffib.shm
import xcffib.xproto
from mss.exception import ScreenShotError

from rigway.agent.backends.base import Pixels

# Attach and GetImage; 1.2 adds AttachFd, which xcffib cannot use.
SHM_VERSION = (1, 1)
ALL_PLANES = 0xFFFFFFFF
# The layout mss assumes too: 4 bytes a pixel, bytes B, G, R, padding.
SUPPORTED_DEPTHS = (24, 32)
BGRX_MASKS = (0xFF0000, 0x00FF00, 0x0000FF)

_IPC_PRIVATE = 0
_IPC_CREAT = 0o1000
_IPC_RMID = 0


class _NoSharedMemory(ScreenShotError):
    """This display cannot fill our segment; a ScreenShotError so `grab` retries once."""


class ScreenCapture:
    """Grabs the root window. Not thread-safe by itself: the screen role's lock guards it.

    `shared_memory=False` forces the mss path (tests compare the two).
    """

    def __init__(self, display_name: str, *, shared_memory: bool = True) -> None:
        self._display_name = display_name
        self._shared_memory = shared_memory
        self._shm: _SharedMemoryGrabber | None = None
        self._sct: mss.MSS | None = None

    @property
    def uses_shared_memory(self) -> bool:
        """Whether grabs are views over our segment: False until the first grab opens the
        capture, and under the mss fallback."""
        return self._shm is not None

    def grab(self) -> Pixels:
        """BGRA (height, width, 4), valid until the next `grab` or `close` of this capture.

        On the shared-memory path it is a view over the segment the server writes into:
        the next grab overwrites it (and after a resize unmaps it), so a caller that keeps
        pixels past that must copy them, and nobody may touch it after `close`. The mss
        fallback returns a fresh buffer, which the same contract covers.

        The fourth byte is the X server's padding of a depth-24 pixel (0 on Xvfb), not
        an opacity: the JPEG and video encoders ignore it, and setting it would cost a
        pass over 8 MB per frame.
        """
        try:
            return self._grab_once()
        except (ScreenShotError, xcffib.xproto.MatchError, xcffib.ConnectionException):
            # The segment is sized once: a grab larger than a shrunk root is a BadMatch
            # (mss raises ScreenShotError), and a new connection reads the new size from
            # its setup. A second failure is real and propagates.
            self.close()
            return self._grab_once()

    def _grab_once(self) -> Pixels:
        if self._shm is None and self._sct is None:
            self._open()
        if self._shm is not None:
            return self._shm.grab()
        assert self._sct is not None
        shot = self._sct.grab(self._sct.monitors[0])
        # mss copies the segment into a new bytearray per grab, so a view is safe to keep.
        pixels = np.frombuffer(shot.raw, dtype=np.uint8)
        return pixels.reshape(shot.height, shot.width, 4)

    def _open(self) -> None:
        if self._shared_memory:
            try:
                self._shm = _SharedMemoryGrabber(self._display_name)
                return
            except _NoSharedMemory:
                pass
        self._sct = mss.MSS(display=self._display_name)

    def close(self) -> None:
        """Release the connection and the segment; safe to call twice, and the next grab
        opens them again."""
        shm, self._shm = self._shm, None
        sct, self._sct = self._sct, None
        if shm is not None:
            shm.close()
        if sct is not None:
            sct.close()


class _SharedMemoryGrabber:
    """An xcffib connection and a segment sized for the root window, which follows resizes.

    Raises `_NoSharedMemory` when the display cannot fill a segment of ours.
    """

    def __init__(self, display_name: str) -> None:
        conn: Any = xcffib.connect(display=display_name)  # type: ignore[no-untyped-call]
        self._conn = conn
        self._segment: int | None = None
        self._pixels: Pixels | None = None
        try:
            setup = conn.get_setup()
            screen = setup.roots[conn.pref_screen]
            self._root: int = screen.root
            if not conn.core.QueryExtension(len("MIT-SHM"), "MIT-SHM").reply().present:
                raise _NoSharedMemory("the display has no MIT-SHM extension")
            self._ext: Any = conn(xcffib.shm.key)
            version = self._ext.QueryVersion().reply()
            if (version.major_version, version.minor_version) < SHM_VERSION:
                raise _NoSharedMemory(f"MIT-SHM {version.major_version}.{version.minor_version}")
            if not _is_bgrx(setup, screen):
                raise _NoSharedMemory("the root window is not 32-bit BGRX")
            # A resize arrives as a ConfigureNotify on the root: no round trip per grab.
            conn.core.ChangeWindowAttributes(
                self._root,
                xcffib.xproto.CW.EventMask,
                [xcffib.xproto.EventMask.StructureNotify],
                is_checked=True,
            ).check()
            # The size is read after the selection: a resize between the connection's
            # setup and it would otherwise never be seen.
            geometry = conn.core.GetGeometry(self._root).reply()
            self._attach(int(geometry.width), int(geometry.height))
        except BaseException:
            self.close()
            raise

    def grab(self) -> Pixels:
        self._follow_resize()
        assert self._pixels is not None
        height, width, _ = self._pixels.shape
        reply = self._ext.GetImage(
            self._root,
            0,
            0,
            width,
            height,
            ALL_PLANES,
            xcffib.xproto.ImageFormat.ZPixmap,
            self._segment,
            0,
        ).reply()
        if reply.depth not in SUPPORTED_DEPTHS or reply.size != self._pixels.nbytes:
            raise ScreenShotError(f"unexpected image: depth {reply.depth}, {reply.size} bytes")
        return self._pixels

    def _follow_resize(self) -> None:
        size = None
        while (event := self._conn.poll_for_event()) is not None:
            if isinstance(event, xcffib.xproto.ConfigureNotifyEvent) and event.window == self._root:
                size = (int(event.width), int(event.height))
        assert self._pixels is not None
        if size is not None and size != (self._pixels.shape[1], self._pixels.shape[0]):
            self._detach()
            self._attach(*size)

    def _attach(self, width: int, height: int) -> None:
        size = width * height * 4
        libc = _libc()
        shmid = libc.shmget(_IPC_PRIVATE, size, _IPC_CREAT | 0o600)
        if shmid == -1:
            raise _NoSharedMemory(f"shmget: {os.strerror(ctypes.get_errno())}")
        try:
            address = libc.shmat(shmid, None, 0)
            if address is None or address == ctypes.c_void_p(-1).value:
                raise _NoSharedMemory(f"shmat: {os.strerror(ctypes.get_errno())}")
            buffer = (ctypes.c_uint8 * size).from_address(address)
            # Unmapped when the last view of it is gone, not when we detach: a view the
            # screen worker is still encoding (a resize, or close() at shutdown) stays
            # readable instead of faulting the process.
            weakref.finalize(buffer, libc.shmdt, address)
            segment = self._conn.generate_id()
            try:
                self._ext.Attach(segment, shmid, False, is_checked=True).check()
            except xcffib.Error as exc:  # BadAccess: a remote server cannot see the segment
                raise _NoSharedMemory(f"the server cannot attach our segment: {exc!r}") from exc
            self._segment = segment
            if shm_attachments(shmid) == 1:
                # A server in another IPC namespace (another container) attaches its own
                # segment of that id: it would fill a stranger's memory, and ours stays
                # black. Only we count in ours then.
                raise _NoSharedMemory("the server attached another segment of our id")
        finally:
            # Marked for removal once both sides are attached: the kernel frees it when
            # the last one detaches, also when we or the server crash.
            libc.shmctl(shmid, _IPC_RMID, None)
        self._pixels = np.frombuffer(memoryview(buffer), dtype=np.uint8).reshape(height, width, 4)

    def _detach(self) -> None:
        # Dropping our view is all the unmapping needs (the finalizer in `_attach`).
        self._pixels = None
        segment, self._segment = self._segment, None
        if segment is not None:
            try:
                self._ext.Detach(segment)
                self._conn.flush()
            except xcffib.ConnectionException:
                pass  # the server is gone, and its attachment with it

    def close(self) -> None:
        try:
            self._detach()
        finally:
            self._conn.disconnect()


def _is_bgrx(setup: Any, screen: Any) -> bool:
    """Whether ZPixmap images of the root are 32 bits a pixel, unpadded, bytes B, G, R, X."""
    depth = screen.root_depth
    if setup.image_byte_order != xcffib.xproto.ImageOrder.LSBFirst or depth not in SUPPORTED_DEPTHS:
        return False
    formats = [f for f in setup.pixmap_formats if f.depth == depth]
    visuals = [
        v
        for d in screen.allowed_depths
        if d.depth == depth
        for v in d.visuals
        if v.visual_id == screen.root_visual
    ]
    return (
        len(formats) == 1
        and (formats[0].bits_per_pixel, formats[0].scanline_pad) == (32, 32)
        and len(visuals) == 1
        and visuals[0]._class
        in (xcffib.xproto.VisualClass.TrueColor, xcffib.xproto.VisualClass.DirectColor)
        and (visuals[0].red_mask, visuals[0].green_mask, visuals[0].blue_mask) == BGRX_MASKS
    )


SYSV_SHM_TABLE = Path("/proc/sysvipc/shm")


def shm_attachments(shmid: int, table: Path = SYSV_SHM_TABLE) -> int | None:
    """How many attachments segment `shmid` has, as this IPC namespace sees them; None
    where the kernel does not say (not Linux), and then the check is skipped."""
    try:
        header, *rows = table.read_text().splitlines()
    except OSError:
        return None
    columns = header.split()
    try:
        id_at, attached_at = columns.index("shmid"), columns.index("nattch")
    except ValueError:
        return None
    for row in rows:
        fields = row.split()
        if len(fields) > max(id_at, attached_at) and fields[id_at] == str(shmid):
            return int(fields[attached_at])
    return None


@functools.cache
def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmget.argtypes = (ctypes.c_int, ctypes.c_size_t, ctypes.c_int)
    libc.shmget.restype = ctypes.c_int
    libc.shmat.argtypes = (ctypes.c_int, ctypes.c_void_p, ctypes.c_int)
    libc.shmat.restype = ctypes.c_void_p  # (void *) -1 on error
    libc.shmdt.argtypes = (ctypes.c_void_p,)
    libc.shmdt.restype = ctypes.c_int
    libc.shmctl.argtypes = (ctypes.c_int, ctypes.c_int, ctypes.c_void_p)
    libc.shmctl.restype = ctypes.c_int
    return libc

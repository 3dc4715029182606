"""The rig's own keyboard and mouse on X11 (`Desktop.last_local_input`).

XInput2 raw events (`RawKeyPress`, `RawButtonPress`, `RawMotion`) selected on the root
window report every input of every device, whichever window has the focus or a grab
(XI 2.1 on), each with its `sourceid`: the slave device it came from. XTEST, which the
agent's own input goes through (`input.py`), injects through slave devices of its own,
"… XTEST pointer" and "… XTEST keyboard" (one pair per master device); any other slave
is a real device, so its events are the owner's. Device ids are classified by name
(`XIQueryDevice`), cached, and asked again when the device hierarchy changes (a device
plugged in or out) or an unknown id shows up.

Layers: `XInputRawSource` is the thin one over the X server (xcffib: a connection of
its own, read only by the listener thread); `LocalInputLog` the logic (which device is
whose, the time of the last local event); `LocalInputListener` the thread that reads the
source as its events arrive (a `select` on its socket, so an event is recorded within a
millisecond or so) and a pipe that wakes it to stop or to catch up. A question
(`last_local_input`) first has the listener catch up: one round trip on the source's
connection, then what it queued is read. So a key the X server took before the question
is counted however late the listener thread was scheduled (a busy rig): the owner's key
pressed just before an API batch refuses that batch, never only the next one. The asker
waits for that at most `CATCH_UP_WAIT_S` (an X server stalled by another client's grab
holds only the listener), then answers from what was recorded. Tests drive the log and listener
through a fake source, and the real source under Xvfb.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, Protocol

import xcffib
import xcffib.xinput

__all__ = [
    "INPUT_MASK",
    "XI_VERSION",
    "DevicesChanged",
    "LocalInputListener",
    "LocalInputLog",
    "RawEventSource",
    "RawInput",
    "XInputRawSource",
    "is_injecting_device",
]

_log = logging.getLogger(__name__)

# 2.2: raw events reach the root even while another client holds a grab (2.0 did not).
XI_VERSION: Final = (2, 2)
_MASK = xcffib.xinput.XIEventMask
INPUT_MASK: Final = _MASK.RawKeyPress | _MASK.RawButtonPress | _MASK.RawMotion
_SELECTED_MASK: Final = INPUT_MASK | _MASK.Hierarchy
_RAW_EVENTS: Final = (
    xcffib.xinput.RawKeyPressEvent,
    xcffib.xinput.RawButtonPressEvent,
    xcffib.xinput.RawMotionEvent,
)
_XTEST_SUFFIXES: Final = (" XTEST pointer", " XTEST keyboard")
_STOP_TIMEOUT_S: Final = 2.0
# The longest a question waits for the listener to catch up.
CATCH_UP_WAIT_S: Final = 0.05
_STOP: Final = b"x"
_CATCH_UP: Final = b"c"


def is_injecting_device(name: str) -> bool:
    """True for XTEST's devices ("Virtual core XTEST pointer", "Second XTEST keyboard"),
    through which every synthesised event (the agent's included) arrives."""
    return name.endswith(_XTEST_SUFFIXES)


@dataclass(frozen=True, slots=True)
class RawInput:
    """A key press, button press or motion, from slave device `sourceid`."""

    sourceid: int


@dataclass(frozen=True, slots=True)
class DevicesChanged:
    """A device was added, removed, attached or renamed: ids may mean others now."""


SourceEvent = RawInput | DevicesChanged


class RawEventSource(Protocol):
    """Raw input events of one X display, on a connection of its own."""

    def fileno(self) -> int:
        """Readable when events may be waiting."""
        ...

    def read(self) -> list[SourceEvent]:
        """The events received so far (may be none); never blocks."""
        ...

    def sync(self) -> None:
        """One round trip: every event the server sent before it is readable then."""
        ...

    def device_names(self) -> dict[int, str]:
        """Every input device's id and name, now."""
        ...

    def close(self) -> None: ...


class LocalInputLog:
    """The time of the last event from a device that is not XTEST's.

    Confined to the listener thread except `last`, a float written whole and read
    from any thread."""

    def __init__(self, device_names: Callable[[], dict[int, str]], clock: Callable[[], float]):
        self._device_names = device_names
        self._clock = clock
        self._is_local: dict[int, bool] = {}
        self.last: float | None = None
        # Events of XTEST's devices seen (the agent's own input among them).
        self.injected_count = 0

    def note(self, event: SourceEvent) -> None:
        if isinstance(event, DevicesChanged):
            self._is_local.clear()
        elif self.is_local(event.sourceid):
            self.last = self._clock()
        else:
            self.injected_count += 1

    def is_local(self, sourceid: int) -> bool:
        known = self._is_local.get(sourceid)
        if known is None:
            names = self._device_names()
            self._is_local = {id_: not is_injecting_device(n) for id_, n in names.items()}
            # A device gone already: its events cannot be told apart, so they count as
            # the owner's (refusing API input for a moment is the safe side).
            known = self._is_local.setdefault(sourceid, True)
        return known


class LocalInputListener:
    """Reads a `RawEventSource` on a daemon thread from `start` to `close`.

    `open_source` runs in `start`, on the caller's thread: xcffib's table of extensions
    is a plain dict that a connection iterates and an extension's first import adds to,
    so opening from a thread of our own would race any import on the caller's. When it
    fails (no XInputExtension, no display) the listener logs why and never records: the
    owner then never counts as active, which is how the agent worked before."""

    def __init__(
        self,
        open_source: Callable[[], RawEventSource],
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._open_source = open_source
        self._clock = clock
        self._log: LocalInputLog | None = None
        self._wake_read, self._wake_write = os.pipe()
        self._thread: threading.Thread | None = None
        # Catch-ups asked for and done, counted (under `_caught_up`): a question waits
        # for one asked after it came.
        self._caught_up = threading.Condition()
        self._catch_ups_asked = 0
        self._catch_ups_done = 0
        # Set once the source is listening (or failed to open): for tests.
        self.ready = threading.Event()
        self._closed = False

    def start(self) -> None:
        try:
            source = self._open_source()
        except Exception as exc:
            _log.warning("cannot listen for the owner's input (%s): it never counts", exc)
            self.ready.set()
            return
        self._log = LocalInputLog(source.device_names, self._clock)
        self._thread = threading.Thread(
            target=self._run, args=(source,), name="rigway-x11-local-input", daemon=True
        )
        self._thread.start()
        self.ready.set()

    def last_local_input(self) -> float | None:
        log = self._log
        if log is None:
            return None
        thread = self._thread
        if thread is not None and thread.is_alive() and not self._closed:
            with self._caught_up:
                self._catch_ups_asked += 1
                asked = self._catch_ups_asked
                with contextlib.suppress(OSError):  # closing meanwhile: answer as is
                    os.write(self._wake_write, _CATCH_UP)
                self._caught_up.wait_for(
                    lambda: self._catch_ups_done >= asked, timeout=CATCH_UP_WAIT_S
                )
        return log.last

    @property
    def injected_count(self) -> int:
        """Events of XTEST's devices read so far (for tests and diagnostics)."""
        log = self._log
        return 0 if log is None else log.injected_count

    def close(self) -> None:
        """Stop the thread and close the source; safe to call twice."""
        if self._closed:
            return
        self._closed = True
        if self._thread is not None and self._thread.is_alive():
            os.write(self._wake_write, _STOP)
            self._thread.join(_STOP_TIMEOUT_S)
        os.close(self._wake_read)
        os.close(self._wake_write)

    def _run(self, source: RawEventSource) -> None:
        try:
            self._listen(source)
        except Exception:
            _log.exception("listening for the owner's input failed: it no longer counts")
        finally:
            source.close()

    def _listen(self, source: RawEventSource) -> None:
        log = self._log
        assert log is not None
        while True:
            # Read first: a reply read on the source's connection (a device query, a
            # catch-up's round trip) may have queued events that its socket no longer
            # announces.
            for event in source.read():
                log.note(event)
            ready, _, _ = select.select([source.fileno(), self._wake_read], [], [])
            if self._wake_read in ready:
                wakes = os.read(self._wake_read, 512)
                if _STOP in wakes:
                    return
                self._catch_up(source, log)

    def _catch_up(self, source: RawEventSource, log: LocalInputLog) -> None:
        with self._caught_up:
            asked = self._catch_ups_asked
        source.sync()
        for event in source.read():
            log.note(event)
        with self._caught_up:
            self._catch_ups_done = asked
            self._caught_up.notify_all()


def _every_device(mask: int) -> Any:
    """An XI2 event mask for all devices (xcffib builds structs only by unpacking)."""
    packed = struct.pack("=HHI", xcffib.xinput.Device.All, 1, mask)
    unpacker: Any = xcffib.MemoryUnpacker(packed)  # type: ignore[no-untyped-call]
    return xcffib.xinput.EventMask(unpacker)  # type: ignore[no-untyped-call]


class XInputRawSource:
    """`RawEventSource` over xcffib: XI 2.2 raw events and hierarchy changes selected on
    the root window for every device."""

    def __init__(self, display_name: str) -> None:
        conn: Any = xcffib.connect(display=display_name)  # type: ignore[no-untyped-call]
        try:
            self._conn = conn
            self._xi: Any = conn(xcffib.xinput.key)
            self._xi.XIQueryVersion(*XI_VERSION).reply()
            root = conn.get_setup().roots[conn.pref_screen].root
            self._xi.XISelectEvents(
                root, 1, [_every_device(_SELECTED_MASK)], is_checked=True
            ).check()
        except BaseException:
            conn.disconnect()
            raise

    def fileno(self) -> int:
        return int(self._conn.get_file_descriptor())

    def read(self) -> list[SourceEvent]:
        events: list[SourceEvent] = []
        while True:
            try:
                event = self._conn.poll_for_event()
            except xcffib.ProtocolException:
                continue  # an X error of some request: not an event
            if event is None:
                return events
            if isinstance(event, _RAW_EVENTS):
                events.append(RawInput(int(event.sourceid)))
            elif isinstance(event, xcffib.xinput.HierarchyEvent):
                events.append(DevicesChanged())

    def sync(self) -> None:
        self._conn.core.GetInputFocus().reply()

    def device_names(self) -> dict[int, str]:
        reply = self._xi.XIQueryDevice(xcffib.xinput.Device.All).reply()
        return {int(info.deviceid): info.name.to_string() for info in reply.infos}

    def close(self) -> None:
        self._conn.disconnect()

"""The x11 backend's owner input (`local_input.py`): devices told apart by name, the
listener over a fake event source, and under Xvfb the real XInput2 path: the agent's
own XTEST input never counts, a press on Xvfb's own keyboard or mouse does."""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Iterator

import pytest

from rigway.agent.backends.x11 import X11Desktop
from rigway.agent.backends.x11.local_input import (
    DevicesChanged,
    LocalInputListener,
    LocalInputLog,
    RawInput,
    SourceEvent,
    XInputRawSource,
    is_injecting_device,
)
from tests.support.x_desktop import XDesktop, wait_until
from tests.support.x_local_input import XvfbDevices

XVFB_DEVICES = {
    2: "Virtual core pointer",
    3: "Virtual core keyboard",
    4: "Virtual core XTEST pointer",
    5: "Virtual core XTEST keyboard",
    6: "Xvfb mouse",
    7: "Xvfb keyboard",
}


@pytest.mark.parametrize(
    ("name", "injecting"),
    [
        ("Virtual core XTEST pointer", True),
        ("Virtual core XTEST keyboard", True),
        ("Second XTEST pointer", True),
        ("Xvfb mouse", False),
        ("AT Translated Set 2 keyboard", False),
        ("Logitech USB Receiver", False),
        ("XTEST pointer of a device named oddly", False),
    ],
)
def test_devices_are_told_apart_by_name(name: str, injecting: bool) -> None:
    assert is_injecting_device(name) is injecting


# ---- the log ---------------------------------------------------------------------------


class Devices:
    """Device names as a server would list them, with how often they were asked."""

    def __init__(self, names: dict[int, str]) -> None:
        self.names = dict(names)
        self.queries = 0

    def __call__(self) -> dict[int, str]:
        self.queries += 1
        return dict(self.names)


def _log(devices: Devices, now: float = 50.0) -> LocalInputLog:
    return LocalInputLog(devices, lambda: now)


def test_real_device_input_is_recorded_at_the_clock() -> None:
    log = _log(Devices(XVFB_DEVICES), now=50.0)
    log.note(RawInput(7))
    assert (log.last, log.injected_count) == (50.0, 0)


def test_xtest_input_is_not_recorded() -> None:
    log = _log(Devices(XVFB_DEVICES))
    log.note(RawInput(4))
    log.note(RawInput(5))
    assert (log.last, log.injected_count) == (None, 2)


def test_devices_are_asked_once_then_cached() -> None:
    devices = Devices(XVFB_DEVICES)
    log = _log(devices)
    for sourceid in (4, 6, 4, 7, 5):
        log.note(RawInput(sourceid))
    assert devices.queries == 1


def test_a_hierarchy_change_asks_again() -> None:
    devices = Devices(XVFB_DEVICES)
    log = _log(devices)
    log.note(RawInput(6))
    # Device 6 unplugged, and its id reused by a new XTEST device.
    devices.names[6] = "Second XTEST pointer"
    log.note(DevicesChanged())
    log.note(RawInput(6))
    assert (devices.queries, log.injected_count) == (2, 1)


def test_an_unknown_id_asks_again() -> None:
    devices = Devices(XVFB_DEVICES)
    log = _log(devices)
    log.note(RawInput(4))
    devices.names[9] = "USB keyboard"
    log.note(RawInput(9))
    assert (devices.queries, log.last) == (2, 50.0)


def test_a_device_gone_before_it_was_named_counts_as_local() -> None:
    log = _log(Devices(XVFB_DEVICES))
    log.note(RawInput(12))
    assert log.last == 50.0


# ---- the listener, over a fake source --------------------------------------------------


class FakeSource:
    """Events a test pushes, announced on a pipe as a socket would."""

    def __init__(self, names: dict[int, str]) -> None:
        self._names = names
        self._events: queue.SimpleQueue[SourceEvent] = queue.SimpleQueue()
        self._read_fd, self._write_fd = os.pipe()
        self._in_flight: list[SourceEvent] = []
        self.round_trips = 0
        self.closed = threading.Event()

    def push(self, event: SourceEvent) -> None:
        self._events.put(event)
        os.write(self._write_fd, b"e")

    def send_in_flight(self, event: SourceEvent) -> None:
        """An event the server sent that has not reached the socket yet: only a round
        trip (`sync`) makes it readable, as on a busy connection."""
        self._in_flight.append(event)

    def sync(self) -> None:
        self.round_trips += 1
        for event in self._in_flight:
            self.push(event)
        self._in_flight.clear()

    def fileno(self) -> int:
        return self._read_fd

    def read(self) -> list[SourceEvent]:
        events = []
        while not self._events.empty():
            os.read(self._read_fd, 1)
            events.append(self._events.get())
        return events

    def device_names(self) -> dict[int, str]:
        return dict(self._names)

    def close(self) -> None:
        os.close(self._read_fd)
        os.close(self._write_fd)
        self.closed.set()


@pytest.fixture
def source() -> FakeSource:
    return FakeSource(XVFB_DEVICES)


@pytest.fixture
def listener(source: FakeSource) -> Iterator[LocalInputListener]:
    listening = LocalInputListener(lambda: source, clock=lambda: 7.5)
    listening.start()
    assert listening.ready.wait(10)
    yield listening
    listening.close()


def test_listener_records_events_as_they_arrive(
    source: FakeSource, listener: LocalInputListener
) -> None:
    assert listener.last_local_input() is None
    source.push(RawInput(4))
    wait_until(lambda: listener.injected_count == 1 or None, message="the XTEST event")
    assert listener.last_local_input() is None
    source.push(RawInput(6))
    assert wait_until(listener.last_local_input, message="the local event") == 7.5


def test_a_question_counts_an_event_the_listener_has_not_read_yet(
    source: FakeSource, listener: LocalInputListener
) -> None:
    # The server took the owner's key before the question; its event is still on the
    # way (the listener thread never woke for it). The question's round trip brings it.
    source.send_in_flight(RawInput(6))
    assert listener.last_local_input() == 7.5


class StalledSource(FakeSource):
    """A round trip that does not come back (another client grabbed the X server)."""

    def __init__(self, names: dict[int, str]) -> None:
        super().__init__(names)
        self.ungrabbed = threading.Event()

    def sync(self) -> None:
        self.ungrabbed.wait(10)
        super().sync()


def test_a_question_does_not_wait_for_a_stalled_server() -> None:
    source = StalledSource(XVFB_DEVICES)
    listener = LocalInputListener(lambda: source, clock=lambda: 7.5)
    listener.start()
    assert listener.ready.wait(10)
    try:
        source.send_in_flight(RawInput(6))
        # Answered from what was recorded while the listener waits on the server...
        assert listener.last_local_input() is None
        source.ungrabbed.set()
        # ...and the next question, once the server answers again, has the event.
        assert wait_until(listener.last_local_input, message="the local event") == 7.5
    finally:
        source.ungrabbed.set()
        listener.close()


def test_a_stopped_listener_answers_from_what_it_recorded(source: FakeSource) -> None:
    listener = LocalInputListener(lambda: source, clock=lambda: 3.0)
    listener.start()
    assert listener.ready.wait(10)
    source.push(RawInput(6))
    wait_until(listener.last_local_input, message="the local event")
    listener.close()
    asked = source.round_trips
    assert listener.last_local_input() == 3.0
    assert source.round_trips == asked  # a closed source is not asked


def test_close_stops_the_thread_and_closes_the_source(source: FakeSource) -> None:
    listener = LocalInputListener(lambda: source)
    listener.start()
    assert listener.ready.wait(10)
    listener.close()
    assert source.closed.is_set()
    listener.close()  # twice is harmless


def test_a_source_that_cannot_open_never_records(caplog: pytest.LogCaptureFixture) -> None:
    def no_xinput() -> FakeSource:
        raise RuntimeError("no XInputExtension")

    listener = LocalInputListener(no_xinput)
    listener.start()
    assert listener.ready.wait(10)
    assert (listener.last_local_input(), listener.injected_count) == (None, 0)
    assert "cannot listen for the owner's input (no XInputExtension)" in caplog.text
    listener.close()


class BrokenSource(FakeSource):
    def read(self) -> list[SourceEvent]:
        raise ConnectionError("the X server went away")


def test_a_source_that_fails_is_closed_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    source = BrokenSource(XVFB_DEVICES)
    listener = LocalInputListener(lambda: source)
    listener.start()
    assert source.closed.wait(10)
    assert "listening for the owner's input failed" in caplog.text
    listener.close()


# ---- the real path, under Xvfb -----------------------------------------------------------


@pytest.fixture
def xvfb_devices(x_desktop: XDesktop) -> Iterator[XvfbDevices]:
    devices = XvfbDevices(x_desktop.display)
    yield devices
    devices.close()


@pytest.fixture
def fresh_backend(x_desktop: XDesktop) -> Iterator[X11Desktop]:
    """A backend opened for the test: its listener has heard nothing yet."""
    backend = x_desktop.open_backend()
    backend.local_input_ready.wait(10)
    yield backend
    backend.close()


@pytest.mark.x11
def test_real_source_lists_xvfbs_devices(x_desktop: XDesktop) -> None:
    source = XInputRawSource(x_desktop.display)
    try:
        names = set(source.device_names().values())
    finally:
        source.close()
    assert {"Virtual core XTEST pointer", "Xvfb mouse", "Xvfb keyboard"} <= names


@pytest.mark.x11
def test_agents_own_input_never_counts(
    fresh_backend: X11Desktop, xvfb_devices: XvfbDevices
) -> None:
    fresh_backend.move_pointer(5, 5)
    fresh_backend.set_key("shift", True)
    fresh_backend.set_key("shift", False)
    fresh_backend.move_pointer(9, 9)
    # Motion twice and a key press, each raw event reported for its slave and master.
    wait_until(lambda: fresh_backend.injected_input_count >= 3 or None, message="XTEST events")
    assert fresh_backend.last_local_input() is None


@pytest.mark.x11
def test_a_key_on_the_rigs_keyboard_counts(
    fresh_backend: X11Desktop, xvfb_devices: XvfbDevices
) -> None:
    sent_at = xvfb_devices.tap_shift()
    recorded = wait_until(fresh_backend.last_local_input, message="the local key")
    latency_ms = (recorded - sent_at) * 1000
    print(f"local key recorded {latency_ms:.2f} ms after it was sent")
    assert recorded >= sent_at
    assert fresh_backend.injected_input_count == 0


@pytest.mark.x11
def test_a_click_of_the_rigs_mouse_counts(
    fresh_backend: X11Desktop, xvfb_devices: XvfbDevices
) -> None:
    sent_at = xvfb_devices.click()
    assert wait_until(fresh_backend.last_local_input, message="the local click") >= sent_at


def _next_local_input(backend: X11Desktop, before: float | None) -> float:
    def newer() -> float | None:
        last = backend.last_local_input()
        return last if last != before else None

    return wait_until(newer, message="the local key")


@pytest.mark.x11
def test_local_input_is_read_within_100_ms(
    fresh_backend: X11Desktop, xvfb_devices: XvfbDevices
) -> None:
    latencies_ms = []
    for _ in range(20):
        before = fresh_backend.last_local_input()
        sent_at = xvfb_devices.tap_shift()
        recorded = _next_local_input(fresh_backend, before)
        latencies_ms.append((recorded - sent_at) * 1000)
    latencies_ms.sort()
    print(f"read latency p50 {latencies_ms[10]:.2f} ms, max {latencies_ms[-1]:.2f} ms")
    assert latencies_ms[-1] < 100

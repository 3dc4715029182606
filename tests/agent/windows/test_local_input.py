"""The windows backend's owner input (`local_input.py`): events told apart by their
injected flag, the hook thread over a fake port (started, fed, stopped), hooks that
cannot go in, and the desktop forwarding to the role. The records' layouts and the
constants are checked against the mingw-w64 headers by test_abi."""

from __future__ import annotations

import ctypes
import queue
import threading
from collections.abc import Callable, Iterator

import pytest

from rigway.agent.backends.windows.desktop import WindowsDesktop
from rigway.agent.backends.windows.local_input import (
    KBDLLHOOKSTRUCT,
    LLKHF_INJECTED,
    LLMHF_INJECTED,
    MSLLHOOKSTRUCT,
    HookKind,
    LocalInputHooks,
    is_injected,
)
from tests.agent.conformance.windows_rig import WindowsFakeRig

# Other flags a real event carries beside the injected one.
LLKHF_EXTENDED = 0x01
LLKHF_UP = 0x80
LLKHF_LOWER_IL_INJECTED = 0x02
LLMHF_LOWER_IL_INJECTED = 0x02


@pytest.mark.parametrize(
    ("kind", "flags", "injected"),
    [
        ("keyboard", 0, False),
        ("keyboard", LLKHF_EXTENDED | LLKHF_UP, False),
        ("keyboard", LLKHF_INJECTED, True),
        ("keyboard", LLKHF_INJECTED | LLKHF_LOWER_IL_INJECTED | LLKHF_UP, True),
        # The mouse's injected bit is the keyboard's extended one: never mixed up.
        ("keyboard", LLMHF_INJECTED, False),
        ("mouse", 0, False),
        ("mouse", LLMHF_INJECTED, True),
        ("mouse", LLMHF_INJECTED | LLMHF_LOWER_IL_INJECTED, True),
        ("mouse", LLKHF_INJECTED, False),
    ],
)
def test_injected_flag_of_each_kind(kind: HookKind, flags: int, injected: bool) -> None:
    assert is_injected(kind, flags) is injected


def test_records_have_the_x64_layout() -> None:
    # test_abi checks them against the headers; this reads the flags where Windows puts them.
    assert ctypes.sizeof(KBDLLHOOKSTRUCT) == 24
    assert KBDLLHOOKSTRUCT.flags.offset == 8
    assert ctypes.sizeof(MSLLHOOKSTRUCT) == 32
    assert MSLLHOOKSTRUCT.flags.offset == 12


# ---- the hook thread, over a fake port ----------------------------------------------------


class FakeHookPort:
    """Hooks that go in (or not) and deliver the events a test feeds, on the hook thread."""

    def __init__(self, *, installs: bool = True, error: Exception | None = None) -> None:
        self._installs = installs
        self._error = error
        self._events: queue.SimpleQueue[tuple[HookKind, int] | None] = queue.SimpleQueue()
        self.delivered = threading.Semaphore(0)
        self.stopped = threading.Event()
        self.thread_names: list[str] = []

    def feed(self, kind: HookKind, flags: int) -> None:
        self._events.put((kind, flags))
        assert self.delivered.acquire(timeout=10)

    def run(
        self,
        on_event: Callable[[HookKind, int], None],
        on_ready: Callable[[bool], None],
    ) -> None:
        self.thread_names.append(threading.current_thread().name)
        if self._error is not None:
            raise self._error
        on_ready(self._installs)
        if not self._installs:
            return
        while (event := self._events.get()) is not None:
            on_event(*event)
            self.delivered.release()
        self.stopped.set()

    def stop(self) -> None:
        self._events.put(None)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def port() -> FakeHookPort:
    return FakeHookPort()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def hooks(port: FakeHookPort, clock: Clock) -> Iterator[LocalInputHooks]:
    started = LocalInputHooks(port, clock=clock)
    started.start()
    yield started
    started.close()


def test_hooks_run_on_a_thread_of_their_own(port: FakeHookPort, hooks: LocalInputHooks) -> None:
    assert hooks.is_listening
    assert port.thread_names == ["rigway-input-hooks"]


def test_nothing_before_the_first_event(hooks: LocalInputHooks) -> None:
    assert hooks.last_local_input() is None


def test_a_typed_key_is_the_owners(
    port: FakeHookPort, hooks: LocalInputHooks, clock: Clock
) -> None:
    port.feed("keyboard", LLKHF_UP)
    assert hooks.last_local_input() == 100.0


def test_a_moved_mouse_is_the_owners(
    port: FakeHookPort, hooks: LocalInputHooks, clock: Clock
) -> None:
    port.feed("mouse", 0)
    clock.now = 107.5
    port.feed("mouse", 0)
    assert hooks.last_local_input() == 107.5


def test_injected_events_never_count(
    port: FakeHookPort, hooks: LocalInputHooks, clock: Clock
) -> None:
    port.feed("mouse", 0)
    clock.now = 200.0
    port.feed("keyboard", LLKHF_INJECTED)
    port.feed("mouse", LLMHF_INJECTED)
    assert hooks.last_local_input() == 100.0


def test_close_stops_the_hook_thread(port: FakeHookPort, clock: Clock) -> None:
    hooks = LocalInputHooks(port, clock=clock)
    hooks.start()
    hooks.close()
    assert port.stopped.is_set()
    assert not hooks.is_listening
    hooks.close()  # twice is harmless


def test_hooks_that_cannot_go_in_never_count(caplog: pytest.LogCaptureFixture) -> None:
    hooks = LocalInputHooks(FakeHookPort(installs=False))
    hooks.start()
    assert (hooks.is_listening, hooks.last_local_input()) == (False, None)
    assert "cannot hook the keyboard and mouse" in caplog.text
    hooks.close()


def test_a_port_that_fails_does_not_hold_up_the_start(caplog: pytest.LogCaptureFixture) -> None:
    hooks = LocalInputHooks(FakeHookPort(error=OSError("no desktop")))
    hooks.start()
    assert not hooks.is_listening
    assert "the input hooks failed" in caplog.text
    hooks.close()


# ---- the desktop -----------------------------------------------------------------------


class FakeLocalInput:
    def __init__(self) -> None:
        self.last: float | None = 12.5
        self.closed = False

    def last_local_input(self) -> float | None:
        return self.last

    def close(self) -> None:
        self.closed = True


def _desktop_with(local_input: FakeLocalInput | None) -> WindowsDesktop:
    return WindowsFakeRig(local_input=local_input).windows_desktop


def test_desktop_tells_the_roles_time_and_closes_it() -> None:
    local_input = FakeLocalInput()
    desktop = _desktop_with(local_input)
    assert desktop.last_local_input() == 12.5
    desktop.close()
    assert local_input.closed


def test_desktop_without_the_role_never_tells() -> None:
    assert _desktop_with(None).last_local_input() is None

"""A disposable X11 desktop for tests: Xvfb, a private session D-Bus and openbox.

Every process started here carries `TAG_VARIABLE=<uuid>` in its environment, and so does
everything D-Bus activates on its behalf (the AT-SPI bus launcher, its bus daemon and
registry, dconf): those are re-parented to init, so killing the session bus does not stop
them. Teardown kills every process with the tag, which leaves nothing behind.

Xvfb picks a free display itself (`-displayfd`), so parallel desktops never collide and
no start-up sleep is needed; openbox is ready when it has set `_NET_SUPPORTING_WM_CHECK`.
"""

from __future__ import annotations

import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from types import TracebackType
from typing import Any, Self, TypeVar

import psutil
import pytest
from Xlib import X, display
from Xlib.ext import xtest

from rigway.agent.backends.x11 import X11Desktop, open_x11_desktop

__all__ = [
    "TAG_VARIABLE",
    "LaunchedApps",
    "XDesktop",
    "XDesktopError",
    "desktop_or_skip",
    "skip_reason",
    "wait_until",
]

TAG_VARIABLE = "RIGWAY_TEST_DESKTOP"
START_TIMEOUT_S = 15.0
STOP_TIMEOUT_S = 5.0
# Variables of the outer session that would make apps talk to the wrong display or bus.
_FOREIGN_VARIABLES = (
    "DISPLAY",
    "DBUS_SESSION_BUS_ADDRESS",
    "NO_AT_BRIDGE",
    "WAYLAND_DISPLAY",
    "XAUTHORITY",
    "AT_SPI_BUS_ADDRESS",
    "XDG_RUNTIME_DIR",
)

# "-s 0": no screen saver after 10 idle minutes, which the agent would report as
# "screensaver" and refuse input behind (tests still start it with `xset s activate`).
XVFB_OPTIONS = (
    "-nolisten",
    "tcp",
    "-noreset",
    "-s",
    "0",
    "+extension",
    "DAMAGE",
    "+extension",
    "XTEST",
)

T = TypeVar("T")


class XDesktopError(RuntimeError):
    """The desktop could not be started."""


def skip_reason() -> str | None:
    """Why X11 tests cannot run here, or None when they can."""
    if not sys.platform.startswith("linux"):
        return f"X11 tests need Linux (this is {sys.platform})"
    if shutil.which("Xvfb") is None:
        return "Xvfb is not installed (run scripts/install-system-deps.sh)"
    return None


@contextmanager
def desktop_or_skip(width: int = 1920, height: int = 1080) -> Iterator[XDesktop]:
    """A started desktop, stopped after; the test that asked is skipped where
    `skip_reason()` says X11 cannot run."""
    reason = skip_reason()
    if reason is not None:
        pytest.skip(reason)
    with XDesktop(width, height) as desk:
        yield desk


def wait_until(
    probe: Callable[[], T | None],
    *,
    timeout_s: float = 10.0,
    interval_s: float = 0.05,
    message: str = "condition",
) -> T:
    """Poll `probe` until it returns something other than None/False; fail at the deadline.

    For what other processes do on the desktop (a window mapped, a widget focused, a
    process gone), which sends this test no event it could wait on."""
    deadline = time.monotonic() + timeout_s
    while True:
        result = probe()
        if result is not None and result is not False:
            return result
        if time.monotonic() >= deadline:
            raise TimeoutError(f"timed out after {timeout_s} s waiting for {message}")
        time.sleep(interval_s)


def _spawn_and_read_line(
    argv: Callable[[int], list[str]], env: dict[str, str], deadline: float
) -> tuple[subprocess.Popen[bytes], str]:
    """Start a service that reports readiness by writing a line to a file descriptor.

    Xvfb writes its display number there once it accepts connections, dbus-daemon its
    address: no fixed display number, no start-up sleep.
    """
    read_fd, write_fd = os.pipe()
    try:
        command = argv(write_fd)
        proc = subprocess.Popen(
            command,
            pass_fds=(write_fd,),
            env=env,
            start_new_session=True,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            # dbus-daemon's harmless "Failed to set fd limit" noise, Xvfb's font warnings.
            stderr=subprocess.DEVNULL,
        )
    finally:
        os.close(write_fd)
    try:
        return proc, _read_line_from_fd(read_fd, deadline, command[0])
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    finally:
        os.close(read_fd)


def _read_line_from_fd(fd: int, deadline: float, what: str) -> str:
    data = b""
    while not data.endswith(b"\n"):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise XDesktopError(f"{what} did not report in time")
        ready, _, _ = select.select([fd], [], [], remaining)
        if not ready:
            continue
        chunk = os.read(fd, 256)
        if not chunk:
            raise XDesktopError(f"{what} exited before reporting")
        data += chunk
    return data.decode().strip()


class XDesktop:
    """Context manager: `with XDesktop() as desk: desk.launch(["zenity", "--info"])`."""

    def __init__(self, width: int = 1920, height: int = 1080, depth: int = 24) -> None:
        self.geometry = f"{width}x{height}x{depth}"
        self.tag = uuid.uuid4().hex
        self.display = ""
        self.env: dict[str, str] = {}
        self._server: subprocess.Popen[bytes] | None = None
        self._services: list[subprocess.Popen[bytes]] = []
        self._apps: list[subprocess.Popen[str]] = []
        self._runtime_dir: str | None = None

    # -- lifecycle -------------------------------------------------------------------
    def __enter__(self) -> Self:
        try:
            self._start()
        except BaseException:
            self._stop()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._stop()

    def _start(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        self._runtime_dir = tempfile.mkdtemp(prefix="rigway-xdesktop-")
        base = {k: v for k, v in os.environ.items() if k not in _FOREIGN_VARIABLES}
        base |= {
            TAG_VARIABLE: self.tag,
            "XDG_RUNTIME_DIR": self._runtime_dir,
            # Keep GTK settings in memory: no dconf writes into the user's real profile.
            "GSETTINGS_BACKEND": "memory",
            "GDK_BACKEND": "x11",
        }
        self.display = self._start_server(base, deadline)
        env = {**base, "DISPLAY": self.display}
        env["DBUS_SESSION_BUS_ADDRESS"] = self._start_session_bus(env, deadline)
        self.env = env
        self._services.append(self._spawn_service(["openbox"]))
        self._wait_for_window_manager(deadline)

    def _start_server(self, env: dict[str, str], deadline: float) -> str:
        def argv(fd: int) -> list[str]:
            return ["Xvfb", "-screen", "0", self.geometry, *XVFB_OPTIONS, "-displayfd", str(fd)]

        self._server, number = _spawn_and_read_line(argv, env, deadline)
        return f":{int(number)}"

    def _start_session_bus(self, env: dict[str, str], deadline: float) -> str:
        def argv(fd: int) -> list[str]:
            return ["dbus-daemon", "--session", "--nofork", f"--print-address={fd}"]

        bus, address = _spawn_and_read_line(argv, env, deadline)
        self._services.append(bus)
        return address

    def _spawn_service(self, argv: Sequence[str]) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            list(argv),
            env=self.env,
            start_new_session=True,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def _wait_for_window_manager(self, deadline: float) -> None:
        """Until openbox has set `_NET_SUPPORTING_WM_CHECK` on the root window, woken by
        the PropertyNotify events the server sends for the root's properties."""
        with self.x_connection() as conn:
            atom = conn.intern_atom("_NET_SUPPORTING_WM_CHECK")
            root = conn.screen().root
            # Selected before the first look: a property set after the look sends an event.
            root.change_attributes(event_mask=X.PropertyChangeMask)
            while root.get_full_property(atom, X.AnyPropertyType) is None:
                remaining_s = deadline - time.monotonic()
                if remaining_s <= 0:
                    raise XDesktopError("openbox did not start in time")
                if conn.pending_events() == 0:
                    select.select([conn.fileno()], [], [], remaining_s)
                while conn.pending_events() > 0:
                    conn.next_event()

    # -- apps ------------------------------------------------------------------------
    def launch(
        self,
        argv: Sequence[str],
        *,
        capture_stdout: bool = False,
        extra_env: dict[str, str] | None = None,
    ) -> subprocess.Popen[str]:
        """Run an app on this desktop (its DISPLAY, session bus and tag)."""
        if not self.env:
            raise XDesktopError("the desktop is not running")
        proc = subprocess.Popen(
            list(argv),
            env={**self.env, **(extra_env or {})},
            start_new_session=True,
            text=True,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE if capture_stdout else subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self._apps.append(proc)
        return proc

    def stop(self, proc: subprocess.Popen[str]) -> None:
        """End one launched app and its children, and reap it."""
        try:
            family = [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]
        except psutil.NoSuchProcess:
            family = []
        _terminate(family)
        _reap(proc)

    def tagged_processes(self) -> list[psutil.Process]:
        """Live processes carrying this desktop's tag (zombies excluded)."""
        found = []
        for proc in psutil.process_iter():
            try:
                if proc.pid != os.getpid() and proc.environ().get(TAG_VARIABLE) == self.tag:
                    found.append(proc)
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                continue
        return found

    def open_backend(self) -> X11Desktop:
        """An x11 backend on this desktop and its session bus (close it when done)."""
        return open_x11_desktop(
            self.display, session_bus_address=self.env["DBUS_SESSION_BUS_ADDRESS"]
        )

    # -- inspection ------------------------------------------------------------------
    @contextmanager
    def x_connection(self) -> Iterator[Any]:
        """A short-lived python-xlib connection to this desktop."""
        conn = display.Display(self.display)
        try:
            yield conn
        finally:
            conn.close()

    def held_keycodes(self) -> list[int]:
        """Keycodes the server has down (QueryKeymap: 32 bytes, bit n is keycode n)."""
        with self.x_connection() as conn:
            keymap = conn.query_keymap()
        return [8 * i + bit for i, byte in enumerate(keymap) for bit in range(8) if byte >> bit & 1]

    def held_buttons(self) -> list[int]:
        """Pointer buttons 1-5 the server has down (QueryPointer's mask)."""
        masks = (X.Button1Mask, X.Button2Mask, X.Button3Mask, X.Button4Mask, X.Button5Mask)
        with self.x_connection() as conn:
            mask = conn.screen().root.query_pointer().mask
        return [n for n, bit in enumerate(masks, start=1) if mask & bit]

    def client_windows(self) -> list[int]:
        """The window manager's `_NET_CLIENT_LIST`."""
        with self.x_connection() as conn:
            atom = conn.intern_atom("_NET_CLIENT_LIST")
            prop = conn.screen().root.get_full_property(atom, X.AnyPropertyType)
        return [] if prop is None else [int(w) for w in prop.value]

    def release_everything(self) -> None:
        """Test isolation: a failed test must not leave a key or button down."""
        keycodes, buttons = self.held_keycodes(), self.held_buttons()
        with self.x_connection() as conn:
            for keycode in keycodes:
                xtest.fake_input(conn, X.KeyRelease, keycode)
            for button in buttons:
                xtest.fake_input(conn, X.ButtonRelease, button)
            conn.sync()

    def _stop(self) -> None:
        server_pid = None if self._server is None else self._server.pid
        tagged = [p for p in self.tagged_processes() if p.pid != server_pid]
        # Apps and daemons first, the X server last: apps die slowly once X is gone.
        _terminate(tagged)
        children: list[subprocess.Popen[str] | subprocess.Popen[bytes]] = [
            *self._apps,
            *self._services,
        ]
        for popen in children:
            _reap(popen)
        if self._server is not None:
            self._server.terminate()
            _reap(self._server)
        _terminate(self.tagged_processes())
        self._apps.clear()
        self._services.clear()
        self.env = {}
        if self._runtime_dir is not None:
            shutil.rmtree(self._runtime_dir, ignore_errors=True)
            self._runtime_dir = None


class LaunchedApps:
    """The apps one test launched, all stopped when it ends (`stop_all`)."""

    def __init__(self, desk: XDesktop) -> None:
        self._desk = desk
        self._procs: list[subprocess.Popen[str]] = []

    def launch(self, argv: Sequence[str], *, capture_stdout: bool = False) -> subprocess.Popen[str]:
        proc = self._desk.launch(argv, capture_stdout=capture_stdout)
        self._procs.append(proc)
        return proc

    def stop_all(self) -> None:
        for proc in self._procs:
            self._desk.stop(proc)
        self._procs.clear()


def _terminate(procs: Sequence[psutil.Process]) -> None:
    for proc in procs:
        try:
            proc.terminate()
            proc.resume()  # a stopped process (tests freeze apps) acts on SIGTERM only then
        except psutil.NoSuchProcess:
            continue
    _, alive = psutil.wait_procs(procs, timeout=STOP_TIMEOUT_S)
    for proc in alive:
        try:
            proc.kill()
        except psutil.NoSuchProcess:
            continue
    psutil.wait_procs(alive, timeout=STOP_TIMEOUT_S)


def _reap(popen: subprocess.Popen[str] | subprocess.Popen[bytes]) -> None:
    """Wait for a Popen child (so no ResourceWarning) and close its pipes."""
    if popen.poll() is None:
        popen.kill()
    try:
        popen.wait(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        popen.kill()
        popen.wait()
    for stream in (popen.stdin, popen.stdout, popen.stderr):
        if stream is not None:
            stream.close()

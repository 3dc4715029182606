"""`rigway agent launch`: run the agent from the version its install root points at.

The launcher is what a rig starts at log-on (`rigway agent install` registers it): it
runs `rigway agent run` as a child process, from `versions/<version>/` when the pointer
names one (that folder goes first on the child's `PYTHONPATH`; dependencies come from
the launcher's own environment), else from the launcher's own installation (the base
installation: a fresh install root needs no version in it). Then:

- a child that exits with `RESTART_EXIT_CODE` has installed a new version and put it on
  trial: the launcher starts whatever the pointer names now;
- a version on trial must write its health marker (its link is up) within
  `trial_timeout_s`; one that exits first or stays silent is stopped, recorded as bad
  and the pointer goes back to the previous version, which is started instead;
- any other exit ends the launcher with the child's code (a service manager restarts
  it); a stop (SIGINT, SIGTERM, and SIGBREAK on Windows) is passed to the child, and
  the launcher ends with it.

How a child is started and stopped differs by platform (`ChildControl`): on POSIX a
stop is the signal itself. Windows delivers no signal to another process, so there the
child starts in a process group of its own and is sent CTRL_BREAK_EVENT, which the
agent takes as its stop; and the launcher puts itself in a kill-on-close Job Object
before starting anything, so whatever it starts dies with it, even when the launcher
is terminated outright (as Task Scheduler's End does).

The launcher stays small and does not update itself: it changes when its own
installation is reinstalled, so a broken release can never take the rollback with it.
"""

from __future__ import annotations

import enum
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PureWindowsPath
from types import FrameType
from typing import Any, Protocol

from rigway.agent.install_root import RESTART_EXIT_CODE, InstallRoot, read_health_marker

__all__ = [
    "CREATE_NEW_PROCESS_GROUP",
    "CREATE_NO_WINDOW",
    "CTRL_BREAK_EVENT",
    "ChildControl",
    "ChildProcess",
    "ConsoleBreak",
    "LaunchSettings",
    "Launcher",
    "LauncherJob",
    "PosixChildControl",
    "Spawn",
    "TrialOutcome",
    "WindowsChildControl",
    "agent_command",
    "console_interpreter",
    "platform_child_control",
    "popen_child",
]

_log = logging.getLogger(__name__)

DEFAULT_TRIAL_TIMEOUT_S = 120.0
# A stopped child gets this long to end its session (restore input, kill apps) before
# it is killed.
DEFAULT_STOP_GRACE_S = 15.0
# Process creation flags and the console event (winbase.h, wincon.h), spelled here so
# this module imports on every platform; the Windows binding checks them against
# Python's own. https://learn.microsoft.com/windows/win32/procthread/process-creation-flags
CREATE_NEW_PROCESS_GROUP = 0x0000_0200
CREATE_NO_WINDOW = 0x0800_0000
CTRL_BREAK_EVENT = 1
_STOP_SIGNALS: tuple[int, ...]
if sys.platform == "win32":
    # SIGBREAK: Ctrl+Break in the launcher's console (SIGTERM never arrives on Windows,
    # but is harmless to handle).
    _STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGBREAK)
else:
    _STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_Handler = Callable[[int, FrameType | None], Any] | int | signal.Handlers | None


class TrialOutcome(enum.Enum):
    HEALTHY = "healthy"
    EXITED = "exited before its link came up"
    TIMED_OUT = "did not bring its link up in time"
    STOPPED = "the launcher was stopped"


@dataclass(frozen=True, slots=True)
class LaunchSettings:
    install_root: Path
    run_args: tuple[str, ...] = ()  # passed to `rigway agent run`
    trial_timeout_s: float = DEFAULT_TRIAL_TIMEOUT_S
    python: str = sys.executable
    # How often a trial's health marker is looked for: a file another process writes
    # has no event to wait on that works on every platform.
    health_poll_s: float = 0.1
    stop_grace_s: float = DEFAULT_STOP_GRACE_S

    def __post_init__(self) -> None:
        if self.trial_timeout_s <= 0 or self.health_poll_s <= 0:
            raise ValueError("trial_timeout_s and health_poll_s must be > 0")
        if self.stop_grace_s < 0:
            raise ValueError("stop_grace_s must be >= 0")


def agent_command(settings: LaunchSettings, installs: InstallRoot) -> list[str]:
    """The child's command line: `rigway agent run` told where its install root and
    health marker are. `-P`: the working directory is not put on `sys.path`, so no
    stray `rigway` folder there shadows the version being started."""
    return [
        settings.python,
        "-P",
        "-m",
        "rigway.cli.main",
        "agent",
        "run",
        *settings.run_args,
        "--install-root",
        str(installs.root),
        "--health-file",
        str(installs.health_file),
    ]


# ---- starting and stopping the child, per platform ------------------------------------


class ChildProcess(Protocol):
    """The part of `subprocess.Popen` the launcher uses."""

    @property
    def pid(self) -> int: ...

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int:
        """The exit code; raises subprocess.TimeoutExpired when `timeout` passes first."""
        ...

    def send_signal(self, sig: int) -> None: ...

    def kill(self) -> None: ...


# (command, environment, creation flags) -> the started child; raises OSError.
Spawn = Callable[[Sequence[str], Mapping[str, str], int], ChildProcess]


def popen_child(command: Sequence[str], environment: Mapping[str, str], flags: int) -> ChildProcess:
    # creationflags must be 0 off Windows.
    return subprocess.Popen(
        list(command), env=dict(environment), stdin=subprocess.DEVNULL, creationflags=flags
    )


class ChildControl(Protocol):
    """How this platform starts the agent child and asks it to stop."""

    def start(self, command: Sequence[str], environment: Mapping[str, str]) -> ChildProcess:
        """Start the child; raises OSError."""
        ...

    def interrupt(self, child: ChildProcess, signum: int) -> None:
        """Ask a running child to stop cleanly (it ends its session first); never raises."""
        ...

    def is_from_child(self, child: ChildProcess, marker_pid: int) -> bool:
        """Whether the health marker's pid is the child's agent process."""
        ...


class PosixChildControl:
    """POSIX: the child gets the launcher's stop signal itself."""

    def __init__(self, spawn: Spawn = popen_child) -> None:
        self._spawn = spawn

    def start(self, command: Sequence[str], environment: Mapping[str, str]) -> ChildProcess:
        return self._spawn(command, environment, 0)

    def interrupt(self, child: ChildProcess, signum: int) -> None:
        if child.poll() is None:
            child.send_signal(signum)

    def is_from_child(self, child: ChildProcess, marker_pid: int) -> bool:
        return marker_pid == child.pid


class LauncherJob(Protocol):
    """The launcher's kill-on-close Job Object (Windows)."""

    def contain_launcher(self) -> None:
        """Put this process in a new kill-on-close job whose only handle it keeps (never
        inherited), so every process it starts from now on is in the job too and dies
        when the launcher ends, however it ends; raises OSError."""
        ...

    def member_pids(self) -> frozenset[int]:
        """The processes in that job now, the launcher included; raises OSError."""
        ...


class ConsoleBreak(Protocol):
    """Console control events (Windows)."""

    def has_console(self) -> bool:
        """Whether this process is attached to a console (`pythonw.exe` is not)."""
        ...

    def send_ctrl_break(self, group_pid: int, *, attach: bool) -> None:
        """CTRL_BREAK_EVENT to the process group `group_pid`. With `attach`, this
        process has no console: it attaches to that group's console for the call and
        detaches after. Raises OSError."""
        ...


def console_interpreter(python: str, *, is_file: Callable[[str], bool] = os.path.isfile) -> str:
    """The console `python.exe` beside a `pythonw.exe`, when there is one: a windowed
    interpreter has no console, so no console event could reach it."""
    path = PureWindowsPath(python)
    if path.name.lower() != "pythonw.exe":
        return python
    console = str(path.with_name("python.exe"))
    return console if is_file(console) else python


class WindowsChildControl:
    """Windows: the launcher in a kill-on-close job; the child in a process group of its
    own, stopped with CTRL_BREAK_EVENT (`rigway agent run` stops on SIGBREAK).

    A console event only reaches processes sharing the sender's console. A launcher in a
    console (started by hand) shares it with its child. One without (`pythonw.exe`,
    as the log-on task runs it) starts the child with the console interpreter and
    CREATE_NO_WINDOW, so the child has a console with no window, and attaches to that
    console only to send the event.
    """

    def __init__(
        self,
        job: LauncherJob,
        console: ConsoleBreak,
        *,
        spawn: Spawn = popen_child,
        is_file: Callable[[str], bool] = os.path.isfile,
        own_pid: int | None = None,
    ) -> None:
        self._job = job
        self._console = console
        self._spawn = spawn
        self._is_file = is_file
        self._own_pid = os.getpid() if own_pid is None else own_pid
        self._shares_console = console.has_console()
        self._is_contained: bool | None = None  # None: not tried yet

    def start(self, command: Sequence[str], environment: Mapping[str, str]) -> ChildProcess:
        if self._is_contained is None:
            self._is_contained = self._contain()
        flags = CREATE_NEW_PROCESS_GROUP
        if not self._shares_console:
            flags |= CREATE_NO_WINDOW
            command = [console_interpreter(command[0], is_file=self._is_file), *command[1:]]
        return self._spawn(command, environment, flags)

    def interrupt(self, child: ChildProcess, signum: int) -> None:
        if child.poll() is not None:
            return
        try:
            self._console.send_ctrl_break(child.pid, attach=not self._shares_console)
        except OSError as exc:
            # The caller's grace and kill still end it, without its session's cleanup.
            _log.warning("cannot send CTRL_BREAK to the agent (pid %d): %s", child.pid, exc)

    def is_from_child(self, child: ChildProcess, marker_pid: int) -> bool:
        """The child's pid, or another process of the launcher's job: a venv's
        `python.exe` is a redirector that runs the real interpreter as its own child,
        and that one writes the marker."""
        if marker_pid == child.pid:
            return True
        if not self._is_contained or marker_pid == self._own_pid:
            return False
        try:
            return marker_pid in self._job.member_pids()
        except OSError as exc:
            _log.warning("cannot list the launcher's job: %s", exc)
            return False

    def _contain(self) -> bool:
        try:
            self._job.contain_launcher()
        except OSError as exc:
            # Windows 7 cannot nest jobs: a launcher already in one (started by a tool
            # that uses jobs) runs without, and its child may outlive it.
            _log.warning("no Job Object for the launcher (%s): the agent may outlive it", exc)
            return False
        return True


def platform_child_control() -> ChildControl:
    """This platform's `ChildControl` over the real process and Win32 calls."""
    control: ChildControl
    if sys.platform == "win32":
        from rigway.agent._launcher_windows import Win32ConsoleBreak, Win32LauncherJob

        control = WindowsChildControl(Win32LauncherJob(), Win32ConsoleBreak())
    else:
        control = PosixChildControl()
    return control


# ---- the launcher ------------------------------------------------------------------


class Launcher:
    def __init__(
        self,
        settings: LaunchSettings,
        installs: InstallRoot | None = None,
        control: ChildControl | None = None,
    ) -> None:
        self._settings = settings
        self._installs = installs if installs is not None else InstallRoot(settings.install_root)
        self._control = control if control is not None else platform_child_control()
        self._child: ChildProcess | None = None
        self._stop_signal: int | None = None

    def run(self) -> int:
        """Start, restart and roll back until the agent ends; its exit code."""
        previous_handlers = self._handle_stop_signals()
        try:
            return self._loop()
        finally:
            for signum, handler in previous_handlers.items():
                signal.signal(signum, handler)

    def stop(self, signum: int = signal.SIGTERM) -> None:
        """Ask the child to stop (`signum` on POSIX); the launcher ends when it has."""
        self._stop_signal = signum
        child = self._child
        if child is not None:
            self._control.interrupt(child, signum)

    def _loop(self) -> int:
        while self._stop_signal is None:
            pointer = self._installs.forget_missing()
            # No child runs now, so no unpacking is under way in the install root.
            self._installs.prune()
            child = self._start(pointer.version)
            if pointer.is_trial and pointer.version is not None:
                outcome = self._await_health(child)
                if outcome in (TrialOutcome.EXITED, TrialOutcome.TIMED_OUT):
                    self._end(child)
                    self._roll_back(pointer.version, outcome)
                    continue
                if outcome is TrialOutcome.HEALTHY and self._installs.commit_trial(pointer.version):
                    _log.info("agent %s passed its trial", pointer.version)
            # A stop signal interrupts this wait only to run its handler (PEP 475), which
            # stops the child: the wait goes on until the child has ended.
            code = child.wait()
            if code != RESTART_EXIT_CODE:
                return code
            _log.info("the agent asked for a restart into %s", self._installs.pointer())
        return 0

    def _start(self, version: str | None) -> ChildProcess:
        self._installs.health_file.unlink(missing_ok=True)
        environment = dict(os.environ)
        if version is not None:
            paths = [str(self._installs.version_dir(version))]
            if environment.get("PYTHONPATH"):
                paths.append(environment["PYTHONPATH"])
            environment["PYTHONPATH"] = os.pathsep.join(paths)
        command = agent_command(self._settings, self._installs)
        _log.info("starting agent %s", version or "(base installation)")
        child = self._control.start(command, environment)
        self._child = child
        if self._stop_signal is not None:  # a stop that came while it was starting
            self._control.interrupt(child, self._stop_signal)
        return child

    def _await_health(self, child: ChildProcess) -> TrialOutcome:
        deadline = time.monotonic() + self._settings.trial_timeout_s
        while True:
            marker_pid = read_health_marker(self._installs.health_file)
            if marker_pid is not None and self._control.is_from_child(child, marker_pid):
                return TrialOutcome.HEALTHY
            if self._stop_signal is not None:
                return TrialOutcome.STOPPED
            if time.monotonic() >= deadline:
                return TrialOutcome.TIMED_OUT
            try:
                child.wait(timeout=self._settings.health_poll_s)
            except subprocess.TimeoutExpired:
                continue
            # It may have written the marker just before it exited: that is no pass.
            return TrialOutcome.EXITED

    def _roll_back(self, version: str, outcome: TrialOutcome) -> None:
        if self._installs.roll_back(version):
            _log.error(
                "agent %s %s: rolled back to %s and recorded as bad",
                version,
                outcome.value,
                self._installs.pointer().version or "the base installation",
            )

    def _end(self, child: ChildProcess) -> None:
        if child.poll() is not None:
            return
        self._control.interrupt(child, signal.SIGTERM)
        try:
            child.wait(timeout=self._settings.stop_grace_s)
        except subprocess.TimeoutExpired:
            _log.warning("the agent did not stop within %g s: killed", self._settings.stop_grace_s)
            child.kill()
            child.wait()

    def _handle_stop_signals(self) -> dict[int, _Handler]:
        # Signal handlers can only be set from the main thread; elsewhere (a test's
        # thread, an embedding program) the caller stops the launcher with `stop()`.
        if threading.current_thread() is not threading.main_thread():
            return {}

        def on_signal(signum: int, _frame: FrameType | None) -> None:
            self.stop(signum)

        return {signum: signal.signal(signum, on_signal) for signum in _STOP_SIGNALS}

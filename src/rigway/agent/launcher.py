"""`rigway agent launch`: run the agent from the version its install root points at.

The launcher is what a rig starts (at logon on Windows): it runs `rigway agent run` as a
child process, from `versions/<version>/` when the pointer names one (that folder goes
first on the child's `PYTHONPATH`; dependencies come from the launcher's own
environment), else from the launcher's own installation. Then:

- a child that exits with `RESTART_EXIT_CODE` has installed a new version and put it on
  trial: the launcher starts whatever the pointer names now;
- a version on trial must write its health marker (its link is up) within
  `trial_timeout_s`; one that exits first or stays silent is stopped, recorded as bad
  and the pointer goes back to the previous version, which is started instead;
- any other exit ends the launcher with the child's code (a service manager restarts
  it); SIGINT and SIGTERM are passed to the child, and the launcher ends with it.

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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from rigway.agent.install_root import RESTART_EXIT_CODE, InstallRoot, read_health_marker

__all__ = ["LaunchSettings", "Launcher", "TrialOutcome", "agent_command"]

_log = logging.getLogger(__name__)

DEFAULT_TRIAL_TIMEOUT_S = 120.0
# A stopped child gets this long to end its session (restore input, kill apps) before
# it is killed.
_STOP_GRACE_S = 15.0
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

    def __post_init__(self) -> None:
        if self.trial_timeout_s <= 0 or self.health_poll_s <= 0:
            raise ValueError("trial_timeout_s and health_poll_s must be > 0")


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


class Launcher:
    def __init__(self, settings: LaunchSettings, installs: InstallRoot | None = None) -> None:
        self._settings = settings
        self._installs = installs if installs is not None else InstallRoot(settings.install_root)
        self._child: subprocess.Popen[bytes] | None = None
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
        """Stop the child with `signum`; the launcher ends when it has."""
        self._stop_signal = signum
        child = self._child
        if child is not None and child.poll() is None:
            child.send_signal(signum)

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
            # signals the child: the wait goes on until the child has ended.
            code = child.wait()
            if code != RESTART_EXIT_CODE:
                return code
            _log.info("the agent asked for a restart into %s", self._installs.pointer())
        return 0

    def _start(self, version: str | None) -> subprocess.Popen[bytes]:
        self._installs.health_file.unlink(missing_ok=True)
        environment = dict(os.environ)
        if version is not None:
            paths = [str(self._installs.version_dir(version))]
            if environment.get("PYTHONPATH"):
                paths.append(environment["PYTHONPATH"])
            environment["PYTHONPATH"] = os.pathsep.join(paths)
        command = agent_command(self._settings, self._installs)
        _log.info("starting agent %s", version or "(base installation)")
        child = subprocess.Popen(command, env=environment, stdin=subprocess.DEVNULL)
        self._child = child
        if self._stop_signal is not None:  # a stop that came while it was starting
            child.send_signal(self._stop_signal)
        return child

    def _await_health(self, child: subprocess.Popen[bytes]) -> TrialOutcome:
        deadline = time.monotonic() + self._settings.trial_timeout_s
        while True:
            if read_health_marker(self._installs.health_file) == child.pid:
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

    def _end(self, child: subprocess.Popen[bytes]) -> None:
        if child.poll() is None:
            child.terminate()
            try:
                child.wait(timeout=_STOP_GRACE_S)
            except subprocess.TimeoutExpired:
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

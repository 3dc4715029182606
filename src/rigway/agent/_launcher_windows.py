"""Binding for the launcher's Windows path (`launcher.WindowsChildControl`).

`Win32LauncherJob` puts the launcher in a kill-on-close Job Object through the windows
backend's job bindings (`backends/windows/_jobs.py`: the same CreateJobObjectW,
SetInformationJobObject and AssignProcessToJobObject wrappers the app tracker uses);
`Win32ConsoleBreak` sends CTRL_BREAK_EVENT through the console API (pywin32 and
`os.kill`). What is started, stopped and when is decided in `launcher.py`.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys

import pywintypes
import win32console

from rigway.agent import launcher

# As a module: its names exist only on Windows (after its own platform assert).
from rigway.agent.backends.windows import _jobs
from rigway.agent.backends.windows.jobs import CONSTANTS

assert sys.platform == "win32"

__all__ = ["Win32ConsoleBreak", "Win32LauncherJob"]

# launcher.py spells these so that it imports everywhere; they are Python's own.
assert launcher.CREATE_NEW_PROCESS_GROUP == subprocess.CREATE_NEW_PROCESS_GROUP
assert launcher.CREATE_NO_WINDOW == subprocess.CREATE_NO_WINDOW
assert launcher.CTRL_BREAK_EVENT == signal.CTRL_BREAK_EVENT

# What AssignProcessToJobObject needs of the process handle.
_ASSIGN_ACCESS = CONSTANTS["PROCESS_SET_QUOTA"] | CONSTANTS["PROCESS_TERMINATE"]


class Win32LauncherJob:
    """`LauncherJob` over `_jobs.Win32JobPort`."""

    def __init__(self, port: _jobs.Win32JobPort | None = None) -> None:
        self._port = port if port is not None else _jobs.Win32JobPort()
        self._job: int | None = None

    def contain_launcher(self) -> None:
        if self._job is not None:
            return
        # Not inheritable (no security attributes), so no child keeps the job alive.
        job = self._port.create_kill_on_close_job()
        handle, error = _jobs.open_process(os.getpid(), _ASSIGN_ACCESS)
        if handle is None:
            self._port.close_handle(job)
            raise ctypes.WinError(error)
        try:
            self._port.assign(job, handle)
        except OSError:
            self._port.close_handle(job)  # still empty: closing it kills nothing
            raise
        finally:
            self._port.close_handle(handle)
        # Never closed: the last handle's close kills every process in the job, and the
        # launcher's exit is when that should happen.
        self._job = job

    def member_pids(self) -> frozenset[int]:
        if self._job is None:
            return frozenset()
        return self._port.job_pids(self._job)


class Win32ConsoleBreak:
    """`ConsoleBreak` over the console API."""

    def has_console(self) -> bool:
        try:
            win32console.GetConsoleProcessList()
        except pywintypes.error:  # no console: the list cannot be read
            return False
        return True

    def send_ctrl_break(self, group_pid: int, *, attach: bool) -> None:
        if not attach:
            os.kill(group_pid, signal.CTRL_BREAK_EVENT)  # GenerateConsoleCtrlEvent
            return
        try:
            win32console.AttachConsole(group_pid)
        except pywintypes.error as exc:
            raise OSError(exc.winerror, f"AttachConsole: {exc.strerror}") from exc
        try:
            # The launcher is not in the child's process group: the event is not its own.
            os.kill(group_pid, signal.CTRL_BREAK_EVENT)
        finally:
            win32console.FreeConsole()

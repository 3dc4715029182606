"""Binding for `jobs.py`: `Win32JobPort`, the `JobPort` over kernel32, user32 and psutil
(the guard's facts through `_processes.py`); plus the process and window primitives
`_toplevel.py` shares.

Only calls, each wrapped once with its argument and result types, built from the
layouts and constants `job_types.ABI` declares; what is launched, killed or spared is
decided in `jobs.py` and `protect.py`.
"""

from __future__ import annotations

import ctypes
import os
import sys
import time
from collections.abc import Mapping

from rigway.agent.apps import tagged_processes
from rigway.agent.backends.windows._ctypes_types import BOOL, DWORD, HANDLE, UINT
from rigway.agent.backends.windows.job_types import (
    CONSTANTS,
    CREATION_FLAGS,
    PROCESS_INFORMATION,
    STARTUPINFOW,
    job_limits,
    parse_process_id_list,
    process_id_list_size,
)
from rigway.agent.backends.windows.jobs import JobAppTracker, SuspendedProcess
from rigway.agent.backends.windows.launch import environment_block, find_executable
from rigway.agent.backends.windows.protect import ProcessInfo

assert sys.platform == "win32"

# Another binding module: after the platform assertion, so that the Linux type check
# (which skips the rest of this module) does not look into it.
from rigway.agent.backends.windows._processes import (  # noqa: E402
    creation_time_100ns,
    environment_value,
    open_process,
    process_info,
)

__all__ = [
    "Win32JobPort",
    "open_job_tracker",
    "open_process",
    "post_close",
    "process_info",
    "terminate_member",
    "terminate_pid",
    "top_level_windows",
    "wait_processes_exit",
    "window_pid",
]

_kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
_user32 = ctypes.WinDLL("user32", use_last_error=True)

HWND = HANDLE
WPARAM = ctypes.c_size_t
LPARAM = ctypes.c_ssize_t
_VOIDP = ctypes.c_void_p

_ERROR_INVALID_PARAMETER = CONSTANTS["ERROR_INVALID_PARAMETER"]
_ERROR_MORE_DATA = CONSTANTS["ERROR_MORE_DATA"]
_WAIT_OBJECT_0 = CONSTANTS["WAIT_OBJECT_0"]
_QUERY = CONSTANTS["PROCESS_QUERY_LIMITED_INFORMATION"]
# ResumeThread's failure value, (DWORD)-1.
_RESUME_FAILED = 0xFFFF_FFFF
# Query rounds for a job that grows between them before taking the list as it is.
_MAX_LIST_ROUNDS = 4


def _declare(dll: ctypes.WinDLL, name: str, restype: object, *argtypes: object) -> None:
    function = getattr(dll, name)
    function.argtypes = argtypes
    function.restype = restype


_declare(
    _kernel32,
    "CreateProcessW",
    BOOL,
    ctypes.c_wchar_p,
    _VOIDP,
    _VOIDP,
    _VOIDP,
    BOOL,
    DWORD,
    _VOIDP,
    ctypes.c_wchar_p,
    ctypes.POINTER(STARTUPINFOW),
    ctypes.POINTER(PROCESS_INFORMATION),
)
_declare(_kernel32, "CreateJobObjectW", HANDLE, _VOIDP, ctypes.c_wchar_p)
_declare(_kernel32, "SetInformationJobObject", BOOL, HANDLE, ctypes.c_int, _VOIDP, DWORD)
_declare(
    _kernel32,
    "QueryInformationJobObject",
    BOOL,
    HANDLE,
    ctypes.c_int,
    _VOIDP,
    DWORD,
    ctypes.POINTER(DWORD),
)
_declare(_kernel32, "AssignProcessToJobObject", BOOL, HANDLE, HANDLE)
_declare(_kernel32, "TerminateJobObject", BOOL, HANDLE, UINT)
_declare(_kernel32, "ResumeThread", DWORD, HANDLE)
_declare(_kernel32, "TerminateProcess", BOOL, HANDLE, UINT)
_declare(_kernel32, "CloseHandle", BOOL, HANDLE)
_declare(_kernel32, "WaitForSingleObject", DWORD, HANDLE, DWORD)
_declare(_kernel32, "IsProcessInJob", BOOL, HANDLE, HANDLE, ctypes.POINTER(BOOL))
_declare(_user32, "GetWindowThreadProcessId", DWORD, HWND, ctypes.POINTER(DWORD))
_declare(_user32, "PostMessageW", BOOL, HWND, UINT, WPARAM, LPARAM)
_WNDENUMPROC = ctypes.WINFUNCTYPE(BOOL, HWND, LPARAM)
_declare(_user32, "EnumWindows", BOOL, _WNDENUMPROC, LPARAM)


def _fail(error: int | None = None) -> OSError:
    return ctypes.WinError(ctypes.get_last_error() if error is None else error)


def _close(handle: int) -> None:
    if not _kernel32.CloseHandle(handle):
        raise _fail()


# -- processes -----------------------------------------------------------------------


def terminate_pid(info: ProcessInfo) -> bool:
    """TerminateProcess, only if the pid still names the process `info` describes: the
    open handle pins the process, and its creation time must match."""
    return _terminate_verified(info, job=None)


def terminate_member(job: int, info: ProcessInfo) -> bool:
    """`terminate_pid`, and only if the process is in `job` now (IsProcessInJob on the
    same handle): a member listed earlier may have exited and its pid gone to a
    process that is not ours."""
    return _terminate_verified(info, job=job)


def _terminate_verified(info: ProcessInfo, *, job: int | None) -> bool:
    if info.create_time_100ns is None:
        return False
    handle, _error = open_process(info.pid, CONSTANTS["PROCESS_TERMINATE"] | _QUERY)
    if handle is None:
        return False
    try:
        if creation_time_100ns(handle) != info.create_time_100ns:
            return False
        if job is not None and not _is_in_job(handle, job):
            return False
        return bool(_kernel32.TerminateProcess(handle, 1))
    finally:
        _close(handle)


def _is_in_job(process: int, job: int) -> bool:
    in_job = BOOL(0)
    if not _kernel32.IsProcessInJob(process, job, ctypes.byref(in_job)):
        return False
    return bool(in_job.value)


def wait_processes_exit(pids: frozenset[int], timeout_s: float) -> frozenset[int]:
    """Waits on each process's handle against one deadline; returns those still
    running (a process that cannot be opened for waiting counts as running)."""
    deadline = time.monotonic() + timeout_s
    running: set[int] = set()
    for pid in sorted(pids):
        handle, error = open_process(pid, CONSTANTS["SYNCHRONIZE"])
        if handle is None:
            if error != _ERROR_INVALID_PARAMETER:
                running.add(pid)
            continue
        try:
            remaining_ms = max(0, int((deadline - time.monotonic()) * 1000))
            if _kernel32.WaitForSingleObject(handle, remaining_ms) != _WAIT_OBJECT_0:
                running.add(pid)
        finally:
            _close(handle)
    return frozenset(running)


# -- top-level windows -----------------------------------------------------------------


def top_level_windows() -> list[int]:
    """Every top-level window (EnumWindows order: top of the z-order first)."""
    found: list[int] = []

    def collect(hwnd: int | None, _lparam: int) -> bool:
        if hwnd is not None:
            found.append(hwnd)
        return True

    callback = _WNDENUMPROC(collect)
    if not _user32.EnumWindows(callback, 0):
        raise _fail()
    return found


def window_pid(hwnd: int) -> int | None:
    """The process that created the window; None when the window is gone."""
    pid = DWORD(0)
    if _user32.GetWindowThreadProcessId(hwnd, ctypes.byref(pid)) == 0:
        return None
    return int(pid.value)


def post_close(hwnd: int) -> bool:
    """WM_CLOSE, posted (never sent: a hung app must not hang the agent)."""
    return bool(_user32.PostMessageW(hwnd, CONSTANTS["WM_CLOSE"], 0, 0))


# -- the port --------------------------------------------------------------------------


class Win32JobPort:
    """`JobPort` on Windows."""

    def resolve_executable(self, path: str) -> str:
        return find_executable(
            path,
            search_path=os.environ.get("PATH"),
            pathext=os.environ.get("PATHEXT"),
            is_file=os.path.isfile,
        )

    def create_process_suspended(
        self, executable: str, command_line: str, env: Mapping[str, str], cwd: str | None
    ) -> SuspendedProcess:
        # CreateProcessW may write into lpCommandLine: it gets a buffer of its own.
        command = (command_line + "\0").encode("utf-16-le")
        command_buffer = ctypes.create_string_buffer(command, len(command))
        block = environment_block(env).encode("utf-16-le")
        block_buffer = ctypes.create_string_buffer(block, len(block))
        startup = STARTUPINFOW()
        startup.cb = ctypes.sizeof(STARTUPINFOW)
        created = PROCESS_INFORMATION()
        ok = _kernel32.CreateProcessW(
            executable,
            command_buffer,
            None,
            None,
            False,  # no handle of the agent's is inherited, its job handles least of all
            CREATION_FLAGS,
            block_buffer,
            cwd,
            ctypes.byref(startup),
            ctypes.byref(created),
        )
        if not ok:
            raise _fail()
        return SuspendedProcess(
            pid=int(created.dwProcessId),
            process_handle=int(created.hProcess),
            thread_handle=int(created.hThread),
        )

    def create_kill_on_close_job(self) -> int:
        # No security attributes: the handle is not inheritable.
        job: int | None = _kernel32.CreateJobObjectW(None, None)
        if job is None:
            raise _fail()
        try:
            self._set_limits(job, kill_on_close=True)
        except OSError:
            _close(job)
            raise
        return job

    def _set_limits(self, job: int, *, kill_on_close: bool) -> None:
        limits = job_limits(kill_on_close=kill_on_close)
        info_class = CONSTANTS["JobObjectExtendedLimitInformation"]
        size = ctypes.sizeof(limits)
        if not _kernel32.SetInformationJobObject(job, info_class, ctypes.byref(limits), size):
            raise _fail()

    def assign(self, job: int, process: int) -> None:
        if not _kernel32.AssignProcessToJobObject(job, process):
            raise _fail()

    def resume(self, thread: int) -> None:
        if _kernel32.ResumeThread(thread) == _RESUME_FAILED:
            raise _fail()

    def terminate_handle(self, process: int) -> None:
        if not _kernel32.TerminateProcess(process, 1):
            raise _fail()

    def close_handle(self, handle: int) -> None:
        _close(handle)

    def job_pids(self, job: int) -> frozenset[int]:
        capacity = 32
        pids: tuple[int, ...] = ()
        for _round in range(_MAX_LIST_ROUNDS):
            size = process_id_list_size(capacity)
            buffer = ctypes.create_string_buffer(size)
            info_class = CONSTANTS["JobObjectBasicProcessIdList"]
            ok = _kernel32.QueryInformationJobObject(job, info_class, buffer, size, None)
            if not ok and ctypes.get_last_error() != _ERROR_MORE_DATA:
                raise _fail()
            assigned, pids = parse_process_id_list(buffer.raw)
            if ok or len(pids) >= assigned:
                break
            capacity = assigned + 16  # it may grow again before the next query
        return frozenset(pids)

    def disarm_job(self, job: int) -> None:
        self._set_limits(job, kill_on_close=False)

    def terminate_job(self, job: int) -> None:
        if not _kernel32.TerminateJobObject(job, 1):
            raise _fail()

    def post_close_to_windows_of(self, pids: frozenset[int]) -> int:
        return sum(
            1 for hwnd in top_level_windows() if window_pid(hwnd) in pids and post_close(hwnd)
        )

    def terminate_pid(self, info: ProcessInfo) -> bool:
        try:
            return terminate_pid(info)
        except OSError:
            return False

    def terminate_member(self, job: int, info: ProcessInfo) -> bool:
        try:
            return terminate_member(job, info)
        except OSError:
            return False

    def wait_exit(self, pids: frozenset[int], timeout_s: float) -> frozenset[int]:
        return wait_processes_exit(pids, timeout_s)

    def process_info(self, pid: int) -> ProcessInfo | None:
        return process_info(pid)

    def agent_process(self) -> ProcessInfo:
        info = process_info(os.getpid())
        if info is None:
            raise OSError("the agent's own process cannot be read")
        return info

    def tagged_pids(self, tag: str, launch_ids: frozenset[str] | None) -> frozenset[int]:
        tagged = tagged_processes(tag, launch_ids, variable=environment_value)
        return frozenset(proc.pid for proc in tagged)


def open_job_tracker(*, cwd: str | None = None) -> JobAppTracker:
    """The Windows app tracker; apps inherit the agent's environment at launch time."""
    return JobAppTracker(Win32JobPort(), cwd=cwd)

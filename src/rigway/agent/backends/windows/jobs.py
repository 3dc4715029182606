"""Apps launched for a session on Windows, each in a Job Object, killed as a whole.

`JobAppTracker` is the Windows `AppTracker` (see `agent/apps.py`), pure logic over a
`JobPort` that the binding (`_jobs.py`) implements with CreateProcessW and the Job
Object API, and the tests with a fake.

Launch, in the one order that leaves no gap (https://devblogs.microsoft.com/oldnewthing/20131209-00/?p=2433):
create the process suspended, create a job with JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE (and
never a breakaway limit), assign the process, resume its thread. The process runs no
instruction outside the job, so every descendant it starts is in the job too. A failure
at any step terminates the suspended process and closes every handle: nothing is left
half started. The child's environment carries `RIGWAY_LAUNCH_TAG` (one per tracker) and
`RIGWAY_LAUNCH_ID` (one per launch), as on POSIX.

Kill: WM_CLOSE to the top-level windows of the job's processes and of tagged escapees,
a grace period that ends as soon as they have all exited (a wait on the processes, not
a sleep), then TerminateJobObject, then the escapees one by one, twice (the second
round catches what started during the first). Every process is vetted by
`protect.is_protected` first; when a job holds a process the guard spares, the job is
not terminated wholesale (its other members are, one by one) and its kill-on-close
limit is lifted before the handle is closed.

What a job cannot hold, and so what a kill cannot reach:
- single-instance apps (Chrome, Edge, Explorer, Windows 11 Notepad) hand the request to
  a copy already running and the launched process exits at once. That copy is not in
  the job, has not the tag and is the user's: it is never killed, and `kill` returns the
  launched pid (which has ended) without claiming anything else;
- processes started on the app's behalf by a broker (COM/DCOM servers, Store/UWP
  activations, WMI's Win32_Process.Create) are children of system services;
- an app that elevates through UAC starts its elevated copy from the AppInfo service.
The tag sweep finds such processes only when they inherited the environment.

Launched pids stay valid while tracked: the tracker holds each launched process's
handle, and Windows does not reuse a pid while a handle to its process is open.
"""

from __future__ import annotations

import ctypes
import logging
import ntpath
import os
import subprocess
import threading
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Protocol

from rigway.agent.apps import (
    KILL_WAIT_S,
    LAUNCH_ID_ENV,
    LAUNCH_TAG_ENV,
    TERMINATE_GRACE_S,
    LaunchError,
    UnknownAppError,
)
from rigway.agent.backends.windows._ctypes_types import DWORD, HANDLE, ULONG_PTR, WORD
from rigway.agent.backends.windows.abi import AbiDeclarations
from rigway.agent.backends.windows.protect import GuardContext, ProcessInfo, is_protected

__all__ = [
    "ABI",
    "CONSTANTS",
    "CREATION_FLAGS",
    "FILETIME",
    "IO_COUNTERS",
    "JOBOBJECT_BASIC_LIMIT_INFORMATION",
    "JOBOBJECT_BASIC_PROCESS_ID_LIST",
    "JOBOBJECT_EXTENDED_LIMIT_INFORMATION",
    "PROCESS_INFORMATION",
    "STARTUPINFOW",
    "JobAppTracker",
    "JobPort",
    "SuspendedProcess",
    "build_command_line",
    "child_environment",
    "environment_block",
    "find_executable",
    "job_limits",
    "parse_process_id_list",
    "process_id_list_size",
]

_log = logging.getLogger(__name__)

LARGE_INTEGER = ctypes.c_int64  # a union in C; its size and alignment are an int64's
ULONGLONG = ctypes.c_uint64
SIZE_T = ctypes.c_size_t
POINTER_T = ctypes.c_void_p  # LPWSTR/LPBYTE fields: pointer-sized, never dereferenced here

CONSTANTS: Final[Mapping[str, int]] = {
    "CREATE_SUSPENDED": 0x4,
    "CREATE_NEW_CONSOLE": 0x10,
    "CREATE_UNICODE_ENVIRONMENT": 0x400,
    "CREATE_BREAKAWAY_FROM_JOB": 0x0100_0000,
    "CREATE_DEFAULT_ERROR_MODE": 0x0400_0000,
    "JOB_OBJECT_LIMIT_BREAKAWAY_OK": 0x800,
    "JOB_OBJECT_LIMIT_SILENT_BREAKAWAY_OK": 0x1000,
    "JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE": 0x2000,
    "JobObjectBasicProcessIdList": 3,
    "JobObjectExtendedLimitInformation": 9,
    "PROCESS_TERMINATE": 0x1,
    "PROCESS_SET_QUOTA": 0x100,
    "PROCESS_QUERY_LIMITED_INFORMATION": 0x1000,
    "SYNCHRONIZE": 0x0010_0000,
    "TOKEN_QUERY": 0x8,
    "WM_CLOSE": 0x10,
    "WAIT_OBJECT_0": 0,
    "WAIT_TIMEOUT": 258,
    "WAIT_FAILED": 0xFFFF_FFFF,
    "ERROR_ACCESS_DENIED": 5,
    "ERROR_INVALID_PARAMETER": 87,
    "ERROR_MORE_DATA": 234,
}

# A console program gets a console of its own (never the agent's, whose Ctrl+C and
# close would reach it), and the agent's error mode is not inherited. Never
# CREATE_BREAKAWAY_FROM_JOB: the app would start outside the agent's job, if any.
CREATION_FLAGS: Final = (
    CONSTANTS["CREATE_SUSPENDED"]
    | CONSTANTS["CREATE_UNICODE_ENVIRONMENT"]
    | CONSTANTS["CREATE_NEW_CONSOLE"]
    | CONSTANTS["CREATE_DEFAULT_ERROR_MODE"]
)
# CreateProcessW's lpCommandLine holds at most 32767 characters, its NUL included.
MAX_COMMAND_LINE_CHARS: Final = 32_766
# Extensions tried for a name without one, when PATHEXT is not set.
DEFAULT_PATHEXT: Final = ".COM;.EXE;.BAT;.CMD"
# cmd.exe re-parses a batch file's arguments by rules no quoting makes safe
# (CVE-2024-24576 "BatBadBut"), and CreateProcessW starts batch files through cmd.exe.
_BATCH_EXTENSIONS: Final = frozenset({".bat", ".cmd"})


class FILETIME(ctypes.Structure):
    _fields_ = (("dwLowDateTime", DWORD), ("dwHighDateTime", DWORD))


class IO_COUNTERS(ctypes.Structure):
    _fields_ = (
        ("ReadOperationCount", ULONGLONG),
        ("WriteOperationCount", ULONGLONG),
        ("OtherOperationCount", ULONGLONG),
        ("ReadTransferCount", ULONGLONG),
        ("WriteTransferCount", ULONGLONG),
        ("OtherTransferCount", ULONGLONG),
    )


class JOBOBJECT_BASIC_LIMIT_INFORMATION(ctypes.Structure):
    _fields_ = (
        ("PerProcessUserTimeLimit", LARGE_INTEGER),
        ("PerJobUserTimeLimit", LARGE_INTEGER),
        ("LimitFlags", DWORD),
        ("MinimumWorkingSetSize", SIZE_T),
        ("MaximumWorkingSetSize", SIZE_T),
        ("ActiveProcessLimit", DWORD),
        ("Affinity", ULONG_PTR),
        ("PriorityClass", DWORD),
        ("SchedulingClass", DWORD),
    )


class JOBOBJECT_EXTENDED_LIMIT_INFORMATION(ctypes.Structure):
    _fields_ = (
        ("BasicLimitInformation", JOBOBJECT_BASIC_LIMIT_INFORMATION),
        ("IoInfo", IO_COUNTERS),
        ("ProcessMemoryLimit", SIZE_T),
        ("JobMemoryLimit", SIZE_T),
        ("PeakProcessMemoryUsed", SIZE_T),
        ("PeakJobMemoryUsed", SIZE_T),
    )


class JOBOBJECT_BASIC_PROCESS_ID_LIST(ctypes.Structure):
    # ProcessIdList is a variable-length array; C declares it with one element.
    _fields_ = (
        ("NumberOfAssignedProcesses", DWORD),
        ("NumberOfProcessIdsInList", DWORD),
        ("ProcessIdList", ULONG_PTR * 1),
    )


class STARTUPINFOW(ctypes.Structure):
    _fields_ = (
        ("cb", DWORD),
        ("lpReserved", POINTER_T),
        ("lpDesktop", POINTER_T),
        ("lpTitle", POINTER_T),
        ("dwX", DWORD),
        ("dwY", DWORD),
        ("dwXSize", DWORD),
        ("dwYSize", DWORD),
        ("dwXCountChars", DWORD),
        ("dwYCountChars", DWORD),
        ("dwFillAttribute", DWORD),
        ("dwFlags", DWORD),
        ("wShowWindow", WORD),
        ("cbReserved2", WORD),
        ("lpReserved2", POINTER_T),
        ("hStdInput", HANDLE),
        ("hStdOutput", HANDLE),
        ("hStdError", HANDLE),
    )


class PROCESS_INFORMATION(ctypes.Structure):
    _fields_ = (
        ("hProcess", HANDLE),
        ("hThread", HANDLE),
        ("dwProcessId", DWORD),
        ("dwThreadId", DWORD),
    )


ABI = AbiDeclarations(
    structs=(
        FILETIME,
        IO_COUNTERS,
        JOBOBJECT_BASIC_LIMIT_INFORMATION,
        JOBOBJECT_EXTENDED_LIMIT_INFORMATION,
        JOBOBJECT_BASIC_PROCESS_ID_LIST,
        STARTUPINFOW,
        PROCESS_INFORMATION,
    ),
    constants=CONSTANTS,
    headers=("windows.h",),
)


def job_limits(*, kill_on_close: bool) -> JOBOBJECT_EXTENDED_LIMIT_INFORMATION:
    """The limits every launch job gets: kill-on-close (or, to spare a protected
    member, nothing), and never a breakaway limit."""
    limits = JOBOBJECT_EXTENDED_LIMIT_INFORMATION()
    flags = CONSTANTS["JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE"] if kill_on_close else 0
    limits.BasicLimitInformation.LimitFlags = flags
    return limits


def process_id_list_size(capacity: int) -> int:
    """Bytes of a JOBOBJECT_BASIC_PROCESS_ID_LIST with room for `capacity` pids."""
    offset = JOBOBJECT_BASIC_PROCESS_ID_LIST.ProcessIdList.offset
    return max(
        ctypes.sizeof(JOBOBJECT_BASIC_PROCESS_ID_LIST), offset + capacity * ctypes.sizeof(ULONG_PTR)
    )


def parse_process_id_list(raw: bytes) -> tuple[int, tuple[int, ...]]:
    """(processes assigned to the job, the pids that fit in the buffer)."""
    header = JOBOBJECT_BASIC_PROCESS_ID_LIST.from_buffer_copy(
        raw[: ctypes.sizeof(JOBOBJECT_BASIC_PROCESS_ID_LIST)]
    )
    offset = JOBOBJECT_BASIC_PROCESS_ID_LIST.ProcessIdList.offset
    fits = (len(raw) - offset) // ctypes.sizeof(ULONG_PTR)
    count = min(header.NumberOfProcessIdsInList, fits)
    pids = (ULONG_PTR * count).from_buffer_copy(raw, offset)
    return header.NumberOfAssignedProcesses, tuple(int(pid) for pid in pids)


def find_executable(
    path: str, *, search_path: str | None, pathext: str | None, is_file: Callable[[str], bool]
) -> str:
    """The program `path` names: absolute (with a drive or a UNC share), or a bare name
    looked up on `search_path` with the extensions of `pathext`, as Windows does, but
    never in the current directory (a program planted in the agent's working directory
    must not win). Raises LaunchError with the reason."""
    if path.strip() == "":
        raise LaunchError("the path is empty")
    if "\0" in path:
        raise LaunchError("the path contains a NUL byte")
    extensions = [e for e in (pathext or DEFAULT_PATHEXT).split(";") if e.startswith(".")]
    if any(mark in path for mark in ("\\", "/", ":")):
        if ntpath.splitdrive(path)[0] == "" or not ntpath.isabs(path):
            raise LaunchError(f"{path} is relative: give an absolute path or a bare command name")
        found = _with_extensions(path, extensions, is_file)
        if found is None:
            raise LaunchError(f"{path} does not exist or is not a file")
    else:
        found = None
        for directory in (search_path or "").split(";"):
            directory = directory.strip().strip('"')
            if directory != "" and ntpath.isabs(directory):
                found = _with_extensions(ntpath.join(directory, path), extensions, is_file)
                if found is not None:
                    break
        if found is None:
            raise LaunchError(f"{path} was not found on PATH")
    if ntpath.splitext(found)[1].lower() in _BATCH_EXTENSIONS:
        raise LaunchError(
            f"{found} is a batch file: cmd.exe parses its arguments unsafely; "
            "launch cmd.exe with /c explicitly instead"
        )
    return found


def _with_extensions(
    candidate: str, extensions: list[str], is_file: Callable[[str], bool]
) -> str | None:
    names = [candidate] if ntpath.splitext(candidate)[1] != "" else []
    names += [candidate + extension for extension in extensions]
    return next((name for name in names if is_file(name)), None)


def build_command_line(executable: str, args: Sequence[str]) -> str:
    """The command line CreateProcessW gets, quoted as the C runtime parses it."""
    if any("\0" in arg for arg in args):
        raise LaunchError("an argument contains a NUL byte")
    line = subprocess.list2cmdline([executable, *args])
    if len(line) > MAX_COMMAND_LINE_CHARS:
        raise LaunchError(f"the command line is {len(line)} characters; Windows allows 32766")
    return line


def child_environment(base: Mapping[str, str], tag: str, launch_id: str) -> dict[str, str]:
    """`base` plus the launch variables (Windows names are case-insensitive, so a
    differently cased copy of ours is dropped, not kept beside it)."""
    ours = {LAUNCH_TAG_ENV.upper(), LAUNCH_ID_ENV.upper()}
    env = {name: value for name, value in base.items() if name.upper() not in ours}
    env[LAUNCH_TAG_ENV] = tag
    env[LAUNCH_ID_ENV] = launch_id
    return env


def environment_block(env: Mapping[str, str]) -> str:
    """A CREATE_UNICODE_ENVIRONMENT block: "name=value\\0" sorted case-insensitively by
    name, ended by one more NUL. Raises LaunchError for a name Windows cannot hold (a
    leading "=" is allowed: cmd keeps per-drive directories as "=C:")."""
    for name, value in env.items():
        if name == "" or "=" in name[1:] or "\0" in name or "\0" in value:
            raise LaunchError(f"the environment variable {name!r} cannot be passed to Windows")
    entries = sorted(env.items(), key=lambda item: item[0].upper())
    if not entries:
        return "\0\0"
    return "".join(f"{name}={value}\0" for name, value in entries) + "\0"


@dataclass(frozen=True, slots=True)
class SuspendedProcess:
    """A process created suspended: its pid and the two handles CreateProcessW returned."""

    pid: int
    process_handle: int
    thread_handle: int


class JobPort(Protocol):
    """The Win32 calls `JobAppTracker` needs. Handles are ints. Calls that fail raise
    OSError unless their doc says otherwise."""

    def resolve_executable(self, path: str) -> str:
        """`find_executable` over the real PATH, PATHEXT and file system."""
        ...

    def create_process_suspended(
        self, executable: str, command_line: str, env: Mapping[str, str], cwd: str | None
    ) -> SuspendedProcess:
        """CreateProcessW with `CREATION_FLAGS` and `environment_block(env)`."""
        ...

    def create_kill_on_close_job(self) -> int:
        """A new unnamed, non-inheritable job with `job_limits(kill_on_close=True)`."""
        ...

    def assign(self, job: int, process: int) -> None: ...

    def resume(self, thread: int) -> None: ...

    def terminate_handle(self, process: int) -> None:
        """TerminateProcess on a handle the tracker holds (a process it created)."""
        ...

    def close_handle(self, handle: int) -> None: ...

    def job_pids(self, job: int) -> frozenset[int]:
        """Pids of the processes in the job now (JobObjectBasicProcessIdList)."""
        ...

    def disarm_job(self, job: int) -> None:
        """Lift kill-on-close, so closing the handle spares what is left in the job."""
        ...

    def terminate_job(self, job: int) -> None: ...

    def post_close_to_windows_of(self, pids: frozenset[int]) -> int:
        """WM_CLOSE to every top-level window these processes own; how many got one."""
        ...

    def terminate_pid(self, info: ProcessInfo) -> bool:
        """TerminateProcess on the process `info` describes, only if its pid still names
        that process (same creation time). False when it did not (gone, reused,
        access denied); never raises."""
        ...

    def wait_exit(self, pids: frozenset[int], timeout_s: float) -> frozenset[int]:
        """Wait until these processes have all exited or `timeout_s` passed; returns
        those still running."""
        ...

    def process_info(self, pid: int) -> ProcessInfo | None:
        """The guard's facts of a process; None when no process has this pid."""
        ...

    def agent_process(self) -> ProcessInfo:
        """The guard's facts of the agent's own process."""
        ...

    def tagged_pids(self, tag: str, launch_ids: frozenset[str] | None) -> frozenset[int]:
        """Live processes whose environment carries `tag` (and, unless None, one of
        `launch_ids`)."""
        ...


@dataclass(frozen=True, slots=True)
class _Launched:
    pid: int
    process_handle: int
    job_handle: int
    launch_id: str


@dataclass(frozen=True, slots=True)
class _Vetted:
    allowed: dict[int, ProcessInfo]
    refused: frozenset[int]


class JobAppTracker:
    """Launches apps into Job Objects and kills them, and only them, on request.

    All calls block (a kill may wait seconds for windows to close): the agent runs
    them in a worker thread. One lock serialises them."""

    def __init__(
        self,
        port: JobPort,
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        close_grace_s: float = TERMINATE_GRACE_S,
        kill_wait_s: float = KILL_WAIT_S,
    ) -> None:
        # env None: apps inherit the agent's environment as it is at launch time.
        self._port = port
        self._env = env
        self._cwd = cwd
        self._grace_s = close_grace_s
        self._kill_wait_s = kill_wait_s
        self._tag = uuid.uuid4().hex
        self._apps: dict[int, _Launched] = {}
        self._agent: ProcessInfo | None = None
        self._lock = threading.Lock()

    @property
    def tag(self) -> str:
        """The `RIGWAY_LAUNCH_TAG` value every process started by this tracker carries."""
        return self._tag

    @property
    def launched_pids(self) -> list[int]:
        """Launched pids not yet killed, in launch order (exited ones included)."""
        with self._lock:
            return list(self._apps)

    def launch(self, path: str, args: Sequence[str]) -> int:
        """Start `path` (absolute, or a bare name looked up on PATH) with `args`."""
        executable = self._port.resolve_executable(path)
        command_line = build_command_line(executable, args)
        launch_id = uuid.uuid4().hex
        base_env = os.environ if self._env is None else self._env
        env = child_environment(base_env, self._tag, launch_id)
        try:
            process = self._port.create_process_suspended(executable, command_line, env, self._cwd)
        except OSError as exc:
            raise LaunchError(f"{path} could not be started: {_reason(exc)}") from exc
        job = self._contain(path, process)
        with self._lock:
            self._apps[process.pid] = _Launched(process.pid, process.process_handle, job, launch_id)
        return process.pid

    def _contain(self, path: str, process: SuspendedProcess) -> int:
        """Job, assign, resume; on any failure the suspended process is ended."""
        job: int | None = None
        try:
            job = self._port.create_kill_on_close_job()
            self._port.assign(job, process.process_handle)
            self._port.resume(process.thread_handle)
        except BaseException as exc:
            self._abandon(process, job)
            if isinstance(exc, OSError):
                raise LaunchError(f"{path} could not be started in a job: {_reason(exc)}") from exc
            raise
        self._close_quietly(process.thread_handle)
        return job

    def _abandon(self, process: SuspendedProcess, job: int | None) -> None:
        try:
            self._port.terminate_handle(process.process_handle)
        except OSError:
            _log.exception("could not terminate the suspended pid %d", process.pid)
        for handle in (process.thread_handle, process.process_handle, job):
            if handle is not None:
                self._close_quietly(handle)

    def kill(self, pid: int | None) -> list[int]:
        """Kill one launched app's job and escapees (or every app's, for None).

        Returns the launched pids now ended and forgotten, including any that had
        exited on their own; a launched process still running afterwards stays tracked
        and is left out."""
        with self._lock:
            if pid is None:
                apps = list(self._apps.values())
            elif pid in self._apps:
                apps = [self._apps[pid]]
            else:
                raise UnknownAppError(pid)
            launch_ids = None if pid is None else frozenset({apps[0].launch_id})
            return self._kill_apps(apps, launch_ids)

    def kill_all(self) -> list[int]:
        """Session end: every launched app and everything it started."""
        return self.kill(None)

    def owned_pids(self) -> frozenset[int]:
        """Live processes `kill_all` would end now (guarded ones left out): the jobs'
        members and every process carrying this tracker's tag."""
        with self._lock:
            context = self._context_locked()
            members = self._members_locked(list(self._apps.values()))
            tagged = self._port.tagged_pids(self._tag, None)
            return frozenset(self._vet(members | tagged, context).allowed)

    def guard_context(self) -> GuardContext:
        """The guard's view now: who the agent is and what this tracker started."""
        with self._lock:
            return self._context_locked()

    def _kill_apps(self, apps: list[_Launched], launch_ids: frozenset[str] | None) -> list[int]:
        context = self._context_locked()
        polite = self._vet(self._members_locked(apps) | self._tagged(launch_ids), context)
        targets = frozenset(polite.allowed)
        if targets and self._port.post_close_to_windows_of(targets) > 0:
            self._port.wait_exit(targets, self._grace_s)
        for _round in range(2):  # the second catches what started during the first
            forced = self._force(apps, launch_ids)
            if forced:
                self._port.wait_exit(forced, self._kill_wait_s)
        return self._forget_ended(apps)

    def _force(self, apps: list[_Launched], launch_ids: frozenset[str] | None) -> frozenset[int]:
        context = self._context_locked()
        forced: set[int] = set()
        for app in apps:
            members = self._port.job_pids(app.job_handle)
            if not members:
                continue
            vetted = self._vet(members, context)
            if vetted.refused or not self._terminate_job(app):
                # The job also holds a process the guard spares: one by one instead.
                self._terminate_each(vetted.allowed.values())
            forced |= vetted.allowed.keys()
        escapees = self._vet(self._tagged(launch_ids) - forced, context).allowed
        self._terminate_each(escapees.values())
        return frozenset(forced | escapees.keys())

    def _terminate_job(self, app: _Launched) -> bool:
        try:
            self._port.terminate_job(app.job_handle)
        except OSError:
            _log.exception("could not terminate the job of pid %d", app.pid)
            return False
        return True

    def _terminate_each(self, infos: Iterable[ProcessInfo]) -> None:
        for info in infos:
            if not self._port.terminate_pid(info):
                _log.info("pid %d (%s) was not terminated", info.pid, info.name)

    def _forget_ended(self, apps: list[_Launched]) -> list[int]:
        running = self._port.wait_exit(frozenset(app.pid for app in apps), 0.0)
        ended = []
        for app in apps:
            if app.pid in running:
                _log.warning("launched pid %d is still running after its kill", app.pid)
                continue
            if self._port.job_pids(app.job_handle):
                # Only spared (or unkillable) members are left: closing the last handle
                # of a kill-on-close job would end them after all.
                self._port.disarm_job(app.job_handle)
            self._close_quietly(app.job_handle)
            self._close_quietly(app.process_handle)
            del self._apps[app.pid]
            ended.append(app.pid)
        return ended

    def _tagged(self, launch_ids: frozenset[str] | None) -> frozenset[int]:
        return self._port.tagged_pids(self._tag, launch_ids)

    def _members_locked(self, apps: list[_Launched]) -> frozenset[int]:
        members: set[int] = set()
        for app in apps:
            members |= self._port.job_pids(app.job_handle)
        return frozenset(members)

    def _context_locked(self) -> GuardContext:
        if self._agent is None:
            self._agent = self._port.agent_process()
        agent = self._agent
        launched = set(self._apps) | self._members_locked(list(self._apps.values()))
        return GuardContext(
            agent_pid=agent.pid,
            agent_ancestor_pids=frozenset(agent.ancestor_pids),
            session_id=agent.session_id,
            user_sid=agent.user_sid,
            launched_pids=frozenset(launched),
            launch_tag=self._tag,
        )

    def _vet(self, pids: frozenset[int], context: GuardContext) -> _Vetted:
        """Each pid's facts, split into those the guard lets us kill and those it
        spares (pids that are gone meanwhile are in neither)."""
        allowed: dict[int, ProcessInfo] = {}
        refused: set[int] = set()
        for pid in sorted(pids):
            info = self._port.process_info(pid)
            if info is None:
                continue
            reason = is_protected(info, context)
            if reason is None:
                allowed[pid] = info
            else:
                _log.warning("not killing pid %d (%s): %s", pid, info.name, reason)
                refused.add(pid)
        return _Vetted(allowed, frozenset(refused))

    def _close_quietly(self, handle: int) -> None:
        try:
            self._port.close_handle(handle)
        except OSError:
            _log.exception("could not close handle %#x", handle)


def _reason(exc: OSError) -> str:
    return exc.strerror if exc.strerror is not None else str(exc)

"""Reading the guard's facts of one process so that they all describe the same process.

Pure: the order of the reads, over `ProcessFactsPort` (`_jobs.py` implements it with
OpenProcess, the process token and psutil). A pid names a process only while something
holds a handle to it: once the process ends and every handle is closed, Windows may hand
the pid to a new process. So the handle is opened first and its creation time read;
psutil's view of the pid is trusted only once its creation time is the handle's (the
same process), and only then are the facts that can make a process killable read: its
ancestors and its launch tag. The handle is held until the last fact is read.

What cannot be tied to the pinned process is left out (None, or empty), and the guard
spares a process whose facts are missing (`protect.is_protected`).
"""

from __future__ import annotations

from typing import Final, Protocol

from rigway.agent.backends.windows.job_types import CONSTANTS
from rigway.agent.backends.windows.protect import ProcessInfo

__all__ = [
    "FILETIME_UNIX_EPOCH_100NS",
    "SAME_CREATION_TOLERANCE_S",
    "ProcessFactsPort",
    "ProcessView",
    "is_same_creation",
    "read_process_info",
]

# FILETIME ticks (100 ns since 1601-01-01 UTC) at the Unix epoch.
FILETIME_UNIX_EPOCH_100NS: Final = 116_444_736_000_000_000
# psutil's creation time is the same FILETIME as a float of Unix seconds, which holds
# it to about a microsecond: a millisecond apart is another process.
SAME_CREATION_TOLERANCE_S: Final = 0.001
_NO_SUCH_PROCESS: Final = CONSTANTS["ERROR_INVALID_PARAMETER"]


class ProcessView(Protocol):
    """One pid as psutil sees it. Reads never raise: what cannot be read is empty."""

    def create_time_s(self) -> float | None:
        """Creation time in Unix seconds; None when unreadable."""
        ...

    def name(self) -> str:
        """The image name; "" when unreadable."""
        ...

    def ancestor_pids(self) -> tuple[int, ...]:
        """Parents from the nearest up, cut where one is gone or younger than its child."""
        ...

    def launch_tag(self) -> str | None:
        """Its RIGWAY_LAUNCH_TAG; None when absent or unreadable."""
        ...


class ProcessFactsPort(Protocol):
    """The reads `read_process_info` orders. Handles are ints."""

    def open_query(self, pid: int) -> tuple[int | None, int]:
        """(a PROCESS_QUERY_LIMITED_INFORMATION handle, 0), or (None, the Win32 error):
        ERROR_INVALID_PARAMETER when no process has this pid."""
        ...

    def close_handle(self, handle: int) -> None: ...

    def creation_time_100ns(self, handle: int) -> int | None:
        """GetProcessTimes' creation time (FILETIME ticks); None when unreadable."""
        ...

    def is_critical(self, handle: int) -> bool | None: ...

    def user_sid(self, handle: int) -> str | None: ...

    def session_id(self, pid: int) -> int | None: ...

    def view(self, pid: int) -> ProcessView | None:
        """psutil's view of the pid; None when psutil finds no such process."""
        ...


def is_same_creation(created_100ns: int, create_time_s: float) -> bool:
    """Whether a FILETIME creation time and psutil's Unix-seconds one are one instant."""
    as_unix_s = (created_100ns - FILETIME_UNIX_EPOCH_100NS) / 10_000_000
    return abs(as_unix_s - create_time_s) <= SAME_CREATION_TOLERANCE_S


def read_process_info(pid: int, port: ProcessFactsPort) -> ProcessInfo | None:
    """The guard's facts of `pid`, all of one process; None when no process has it (or
    the process psutil sees is not the one the handle holds)."""
    handle, error = port.open_query(pid)
    if handle is None:
        if error == _NO_SUCH_PROCESS:
            return None
        # Not ours to open (another user's, a protected process): nothing pins the pid,
        # so only the name is kept, for the log; the guard spares it (no user, no
        # creation time).
        view = port.view(pid)
        name = "" if view is None else view.name()
        return ProcessInfo(pid, name, session_id=None, user_sid=None, is_critical=None)
    try:
        return _pinned_info(pid, handle, port)
    finally:
        port.close_handle(handle)


def _pinned_info(pid: int, handle: int, port: ProcessFactsPort) -> ProcessInfo | None:
    created = port.creation_time_100ns(handle)
    view = port.view(pid)
    if view is None:
        return None  # exited: the handle keeps its pid, psutil no longer lists it
    create_time_s = view.create_time_s()
    is_verified = (
        created is not None
        and create_time_s is not None
        and is_same_creation(created, create_time_s)
    )
    if created is not None and create_time_s is not None and not is_verified:
        return None  # psutil describes another process than the one pinned
    return ProcessInfo(
        pid=pid,
        name=view.name(),
        session_id=port.session_id(pid),
        user_sid=port.user_sid(handle),
        is_critical=port.is_critical(handle),
        # Read only of the verified process: these are what make a process killable.
        ancestor_pids=view.ancestor_pids() if is_verified else (),
        launch_tag=view.launch_tag() if is_verified else None,
        create_time_100ns=created if is_verified else None,
    )
